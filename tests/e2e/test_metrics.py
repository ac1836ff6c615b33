#!/usr/bin/env python3
"""End-to-end tests of GET /metrics: the real binary, real TLS, and promtool on what it serves.

    GPUADMIT_BIN=build/release/gpuadmit python3 tests/e2e/test_metrics.py
    GPUADMIT_SLOW=1 ...    slower binary (sanitizers): same assertions, longer time bounds

Python 3 standard library only, plus Debian's promtool (package prometheus, installed by
scripts/install-deps.sh): a missing promtool is a failure, not a skip. One server serves a
small policy; each request kind (allowed, denied, patched, audited, malformed, 404, 405, 413),
each failed TLS handshake and each policy reload must move exactly its counters, and the
scraped text must pass "promtool check metrics" with nothing to say. Prints "ok - NAME" or
"not ok - NAME: REASON" per test and ends with "e2e-metrics: N passed, M failed".
"""
import http.client
import json
import os
import re
import shutil
import socket
import ssl
import subprocess
import sys
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import (SERVICE_DNS, SLOW, Fail, ServerProcess, check, eq, indent,  # noqa: E402
                    make_certs, run_suite, t, tls_connect)

BIN = os.environ.get("GPUADMIT_BIN", "build/release/gpuadmit")
PROMTOOL = shutil.which("promtool") or "/usr/bin/promtool"
SUITE_LIMIT_S = 90 if SLOW else 45
JSON_CT = {"Content-Type": "application/json"}
MAX_BODY = 4096

POLICY = """apiVersion: gpuadmit.io/v1alpha1
kind: GPUPolicy
metadata:
  name: metrics
spec:
  gpu:
    resources: [nvidia.com/gpu]
    nodeLabels:
      nvidia.com/gpu.present: "true"
    taints:
      - key: nvidia.com/gpu
        effect: NoSchedule
  priorityClasses:
    - name: gpu-standard
      value: 100000
      preemptionPolicy: PreemptLowerPriority
  rules:
    - name: gpu-request
      type: gpu-request
      action: Deny
      maxPerPod: 8
    - name: priority-class
      type: priority-class
      action: Mutate
      default: gpu-standard
    - name: tolerations-audit
      type: tolerations
      action: Mutate
      enforcement: Audit
"""

# ---------------------------------------------------------------------------------------------
# the server


class Server(ServerProcess):
    """gpuadmit serve with the policy above, its /metrics also on a plain-HTTP port."""

    def __init__(self, work, certs, *extra, name="server"):
        self.work = work
        self.rules = os.path.join(work, "rules")
        os.makedirs(self.rules, exist_ok=True)
        with open(os.path.join(self.rules, "policy.yaml"), "w") as f:
            f.write(POLICY)
        self.log_path = os.path.join(work, name + ".log")
        self.args = [BIN, "serve", "--listen", "127.0.0.1:0", "--metrics-addr", "127.0.0.1:0",
                     "--tls-cert", certs[1], "--tls-key", certs[2], "--rules", self.rules,
                     "--max-body-bytes", str(MAX_BODY), "--shutdown-grace", "5"] + list(extra)
        self.ca = certs[0]
        self.metrics_port = None

    def start(self):
        self.launch()
        ev = self.wait_log("serving metrics over plain HTTP", timeout=t(2))
        check(ev is not None and int(ev.get("port", 0)) > 0,
              "no \"serving metrics over plain HTTP\" line with a port: %s" % self.log_tail())
        self.metrics_port = int(ev["port"])
        return self

    def context(self):
        ctx = ssl.create_default_context(cafile=self.ca)
        ctx.check_hostname = True
        return ctx

    def https(self):
        c = http.client.HTTPSConnection(SERVICE_DNS, self.port, context=self.context(),
                                        timeout=t(10))
        c.sock = tls_connect(self.port, self.context(), t(10))
        return c


def call(conn, method, path, body=None, headers=None):
    conn.request(method, path, body=body, headers=headers or {})
    resp = conn.getresponse()
    return resp, resp.read()


# ---------------------------------------------------------------------------------------------
# the exposition format, parsed strictly enough to compare values

SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)$')
LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)",?')


def parse(text):
    """{(name, ((label, value), ...)): float}, checking that every sample's family has HELP and
    TYPE lines before it."""
    out, typed = {}, set()
    check(text.endswith("\n"), "exposition does not end with a newline")
    for line in text.splitlines():
        if line.startswith("# HELP ") or line.startswith("# TYPE "):
            parts = line.split(" ", 3)
            if parts[1] == "TYPE":
                typed.add(parts[2])
            continue
        m = SAMPLE.match(line)
        check(m is not None, "not a sample line: %r" % line)
        name = m.group(1)
        family = re.sub(r"_(bucket|sum|count)$", "", name)
        check(name in typed or family in typed, "sample before its TYPE line: %r" % line)
        labels = tuple(sorted(LABEL.findall(m.group(3) or "")))
        out[(name, labels)] = float(m.group(4))
    return out


def value(samples, name, **labels):
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


def scrape(srv, tls=False):
    if tls:
        c = srv.https()
    else:
        c = http.client.HTTPConnection("127.0.0.1", srv.metrics_port, timeout=t(10))
    try:
        resp, body = call(c, "GET", "/metrics")
    finally:
        c.close()
    eq(resp.status, 200, "GET /metrics status")
    eq(resp.getheader("Content-Type"), "text/plain; version=0.0.4; charset=utf-8",
       "GET /metrics Content-Type")
    return body.decode("utf-8")


def delta(before, after, name, **labels):
    return value(after, name, **labels) - value(before, name, **labels)


def expect_deltas(before, after, want, what):
    """want: {(name, frozenset(labels)): n}; every counter of after that is not in want must
    not have moved (histogram internals and gauges aside)."""
    bad = []
    for (name, labels), n in want.items():
        got = delta(before, after, name, **dict(labels))
        if got != n:
            bad.append("%s%s moved by %g, want %g" % (name, dict(labels), got, n))
    for key, v in after.items():
        name, labels = key
        if not name.endswith("_total") or (name, frozenset(labels)) in want:
            continue
        if v != before.get(key, 0.0):
            bad.append("%s%s moved by %g, want 0" % (name, dict(labels), v - before.get(key, 0)))
    check(not bad, "%s: %s" % (what, "; ".join(bad)))


def K(name, **labels):
    return (name, frozenset(labels.items()))


REQ = "gpuadmit_admission_requests_total"
RULE = "gpuadmit_rule_outcomes_total"
ERR = "gpuadmit_http_errors_total"
TLS = "gpuadmit_tls_handshake_failures_total"
RELOAD = "gpuadmit_policy_reloads_total"
HIST = "gpuadmit_admission_request_duration_seconds"


# ---------------------------------------------------------------------------------------------
# reviews

def pod(name, gpus=1, cls=None, tolerate=True, gpu_node=True):
    spec = {"containers": [{"name": "main", "image": "nvcr.io/nvidia/pytorch:24.01-py3",
                            "resources": {"limits": {"nvidia.com/gpu": str(gpus)},
                                          "requests": {"nvidia.com/gpu": str(gpus)}}}]}
    if not gpus:
        spec["containers"][0]["resources"] = {}
    if gpu_node:
        spec["nodeSelector"] = {"nvidia.com/gpu.present": "true"}
    if tolerate:
        spec["tolerations"] = [{"key": "nvidia.com/gpu", "operator": "Exists",
                                "effect": "NoSchedule"}]
    if cls:
        spec["priorityClassName"] = cls
        spec["priority"] = 100000
        spec["preemptionPolicy"] = "PreemptLowerPriority"
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "ml"}, "spec": spec}


def review(uid, obj):
    return json.dumps({
        "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
        "request": {
            "uid": uid,
            "kind": {"group": "", "version": "v1", "kind": "Pod"},
            "resource": {"group": "", "version": "v1", "resource": "pods"},
            "name": obj["metadata"]["name"], "namespace": "ml", "operation": "CREATE",
            "userInfo": {"username": "alice", "groups": ["system:authenticated"]},
            "object": obj, "oldObject": None, "dryRun": False,
        }}).encode()


def admit(srv, path, uid, obj):
    c = srv.https()
    try:
        resp, body = call(c, "POST", path, review(uid, obj), JSON_CT)
    finally:
        c.close()
    eq(resp.status, 200, "%s %s status (%r)" % (path, uid, body[:200]))
    return json.loads(body)["response"]


def decisions(srv, since):
    return [ev for ev in srv.events(since) if ev.get("msg") == "decision"]


# ---------------------------------------------------------------------------------------------
# tests

TESTS = []


def test(fn):
    TESTS.append(fn)
    return fn


class Env:
    pass


E = Env()


@test
def reviews_move_their_counters():
    srv = E.srv
    before, mark = parse(scrape(srv)), srv.log_size()
    # allowed: a pod that has nothing to do with GPUs
    r = admit(srv, "/validate", "m-allowed", pod("web", gpus=0, tolerate=False, gpu_node=False))
    check(r["allowed"] and "patch" not in r, "allowed review: %r" % r)
    # patched: a GPU pod without a PriorityClass
    r = admit(srv, "/mutate", "m-patched", pod("train-a"))
    check(r["allowed"] and "patch" in r, "patched review: %r" % r)
    # denied: nine GPUs, over maxPerPod
    r = admit(srv, "/validate", "m-denied", pod("train-b", gpus=9, cls="gpu-standard"))
    check(not r["allowed"], "denied review: %r" % r)
    # audited: the tolerations rule (Audit) would patch; nothing is patched
    r = admit(srv, "/mutate", "m-audit", pod("train-c", cls="gpu-standard", tolerate=False))
    check(r["allowed"] and "patch" not in r, "audited review: %r" % r)
    after = parse(scrape(srv))
    expect_deltas(before, after, {
        K(REQ, endpoint="validate", kind="Pod", operation="CREATE", outcome="allowed"): 1,
        K(REQ, endpoint="mutate", kind="Pod", operation="CREATE", outcome="patched"): 1,
        K(REQ, endpoint="validate", kind="Pod", operation="CREATE", outcome="denied"): 1,
        K(REQ, endpoint="mutate", kind="Pod", operation="CREATE", outcome="allowed"): 1,
        K(RULE, rule="priority-class", type="priority-class", enforcement="Enforce",
          outcome="patch"): 1,
        K(RULE, rule="gpu-request", type="gpu-request", enforcement="Enforce",
          outcome="deny"): 1,
        K(RULE, rule="tolerations-audit", type="tolerations", enforcement="Audit",
          outcome="would_patch"): 1,
    }, "after allowed, patched, denied and audited reviews")
    for ep, n in (("mutate", 2), ("validate", 2)):
        eq(delta(before, after, HIST + "_count", endpoint=ep), n, "%s histogram count" % ep)
        eq(delta(before, after, HIST + "_bucket", endpoint=ep, le="+Inf"), n,
           "%s +Inf bucket" % ep)
        check(delta(before, after, HIST + "_sum", endpoint=ep) > 0, "%s latency sum" % ep)
    # one decision line per rule finding, none for the allowed review (info level)
    lines = decisions(srv, mark)
    eq(sorted((ev["uid"], ev["rule"], ev["enforcement"], ev["outcome"]) for ev in lines),
       sorted([("m-patched", "priority-class", "Enforce", "patched"),
               ("m-denied", "gpu-request", "Enforce", "denied"),
               ("m-audit", "tolerations-audit", "Audit", "would patch")]),
       "decision lines")
    for ev in lines:
        for field in ("uid", "kind", "namespace", "name", "operation", "user", "rule",
                      "enforcement", "outcome", "message"):
            check(isinstance(ev.get(field), str) and (ev[field] or field == "name"),
                  "decision line lacks %s: %r" % (field, ev))
        eq((ev["kind"], ev["namespace"], ev["operation"], ev["user"]),
           ("Pod", "ml", "CREATE", "alice"), "decision line fields")
    check(not any(ev.get("uid") == "m-allowed" for ev in srv.events(mark)),
          "an allowed review was logged at --log-level info")


@test
def http_errors_move_their_counters():
    srv = E.srv
    before = parse(scrape(srv))
    c = srv.https()
    try:
        resp, _ = call(c, "POST", "/validate", b"{", JSON_CT)
        eq(resp.status, 400, "malformed review status")
        resp, _ = call(c, "GET", "/nope")
        eq(resp.status, 404, "unknown path status")
        resp, _ = call(c, "POST", "/metrics", b"{}", JSON_CT)
        eq(resp.status, 405, "POST /metrics status")
        eq(resp.getheader("Allow"), "GET, HEAD", "Allow of /metrics")
        resp, body = call(c, "HEAD", "/metrics")
        eq((resp.status, body), (200, b""), "HEAD /metrics")
    finally:
        c.close()
    c = srv.https()
    try:
        resp, _ = call(c, "POST", "/mutate", b" " * (MAX_BODY + 100), JSON_CT)
        eq(resp.status, 413, "over-limit body status")
    finally:
        c.close()
    # the plain port serves only /metrics, /healthz and /readyz
    p = http.client.HTTPConnection("127.0.0.1", srv.metrics_port, timeout=t(10))
    try:
        resp, _ = call(p, "POST", "/mutate", review("m-plain", pod("x")), JSON_CT)
        eq(resp.status, 404, "/mutate on the metrics port")
        for path in ("/healthz", "/readyz"):
            resp, body = call(p, "GET", path)
            eq((resp.status, body), (200, b"ok\n"), "%s on the metrics port" % path)
    finally:
        p.close()
    after = parse(scrape(srv, tls=True))
    expect_deltas(before, after, {
        K(REQ, endpoint="validate", kind="other", operation="other", outcome="error"): 1,
        K(REQ, endpoint="mutate", kind="other", operation="other", outcome="error"): 1,
        K(ERR, code="400"): 1,
        K(ERR, code="404"): 2,
        K(ERR, code="405"): 1,
        K(ERR, code="413"): 1,
    }, "after 400, 404 (twice), 405 and 413")
    eq(delta(before, after, HIST + "_count", endpoint="validate"), 1, "validate histogram")
    eq(delta(before, after, HIST + "_count", endpoint="mutate"), 1, "mutate histogram")


def handshake(srv, ctx):
    """A TLS handshake that may fail; True when it completed."""
    try:
        s = tls_connect(srv.port, ctx, t(5))
    except (ssl.SSLError, ConnectionError, socket.timeout):
        return False
    s.close()
    return True


def wait_for(srv, pred, what):
    deadline = time.monotonic() + t(3)
    while True:
        now = parse(scrape(srv))
        if pred(now):
            return now
        if time.monotonic() > deadline:
            raise Fail("%s: not seen within %.0f s" % (what, t(3)))
        time.sleep(0.05)


@test
def failed_handshakes_are_counted():
    srv = E.srv
    before = parse(scrape(srv))
    # a client that does not trust the certificate aborts after the ServerHello
    stranger = ssl.create_default_context()  # system CAs only: not this run's CA
    check(not handshake(srv, stranger), "a handshake with an unknown CA succeeded")
    # a complete handshake that sends no request is not a failure
    check(handshake(srv, srv.context()), "a good handshake failed")
    # garbage: plain HTTP to the TLS port
    raw = socket.create_connection(("127.0.0.1", srv.port), timeout=t(5))
    raw.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
    try:
        raw.recv(4096)
    except (ConnectionError, socket.timeout):
        pass
    raw.close()
    # the server counts at close, which may follow the client's close by a moment
    after = wait_for(srv, lambda m: delta(before, m, TLS, phase="before_client_hello") >= 1 and
                     delta(before, m, TLS, phase="after_client_hello") >= 1,
                     "both handshake failures")
    time.sleep(0.2)
    after = parse(scrape(srv))
    expect_deltas(before, after, {
        K(TLS, phase="after_client_hello"): 1,
        K(TLS, phase="before_client_hello"): 1,
    }, "after an untrusting client, a good handshake and garbage")


def install_rules(srv, text):
    """Replaces the policy file in one rename (one inotify event, so one reload)."""
    tmp = os.path.join(srv.work, "policy.yaml.new")
    with open(tmp, "w") as f:
        f.write(text)
    os.rename(tmp, os.path.join(srv.rules, "policy.yaml"))


@test
def policy_reloads_are_counted():
    srv = E.srv
    before, mark = parse(scrape(srv)), srv.log_size()
    install_rules(srv, POLICY.replace("rules:", "rulez:"))
    check(srv.wait_log("policy refused", since=mark, timeout=t(3)) is not None,
          "no \"policy refused\" line: %s" % srv.log_tail())
    time.sleep(0.3)  # past the reload debounce: no second reload may follow
    mid = parse(scrape(srv))
    expect_deltas(before, mid, {K(RELOAD, result="failure"): 1}, "after a broken policy")
    eq(value(mid, "gpuadmit_policy_generation"), value(before, "gpuadmit_policy_generation"),
       "generation after a refused policy")
    mark = srv.log_size()
    install_rules(srv, POLICY.replace("maxPerPod: 8", "maxPerPod: 4"))
    check(srv.wait_log("policy reloaded", since=mark, timeout=t(3)) is not None,
          "no \"policy reloaded\" line: %s" % srv.log_tail())
    time.sleep(0.3)
    after = parse(scrape(srv))
    expect_deltas(mid, after, {K(RELOAD, result="success"): 1}, "after a good policy")
    eq(value(after, "gpuadmit_policy_generation"), value(mid, "gpuadmit_policy_generation") + 1,
       "generation after a reload")
    loaded = value(after, "gpuadmit_policy_loaded_timestamp_seconds")
    check(abs(loaded - time.time()) < 60, "policy load time %r is not now" % loaded)


@test
def slow_clients_are_cut_on_the_metrics_port():
    """Tricklers on the plain port are closed like those on the webhook port, so they cannot
    hold all its connections; they are no failed TLS handshakes."""
    slow = os.path.join(E.work, "slow")
    os.makedirs(slow, exist_ok=True)
    srv = Server(slow, E.certs, "--idle-timeout", "1", "--request-timeout", "1",
                 name="slow").start()
    try:
        before = parse(scrape(srv))
        socks = []
        for _ in range(3):
            sk = socket.create_connection(("127.0.0.1", srv.metrics_port), timeout=t(10))
            sk.sendall(b"GET /metrics HTTP/1.1\r\n")
            socks.append(sk)
        deadline, closed = time.monotonic() + t(12), 0
        while time.monotonic() < deadline and closed < len(socks):
            time.sleep(0.4)
            closed = 0
            for sk in socks:
                try:
                    sk.sendall(b"X")  # one byte at a time: libmicrohttpd's timeout restarts
                except OSError:
                    closed += 1
        for sk in socks:
            sk.close()
        eq(closed, 3, "trickling connections closed within %.0f s" % t(12))
        check(srv.wait_log("closed slow connections", timeout=t(2)) is not None,
              "no \"closed slow connections\" log line:\n" + srv.log_tail())
        after = parse(scrape(srv))
        for phase in ("before_client_hello", "after_client_hello"):
            eq(delta(before, after, "gpuadmit_tls_handshake_failures_total", phase=phase), 0,
               "TLS failures counted for plain connections (%s)" % phase)
        srv.check_clean_exit(srv.stop(t(10)))
    finally:
        srv.kill()


@test
def exposition_passes_promtool():
    srv = E.srv
    check(os.access(PROMTOOL, os.X_OK),
          "promtool not found (Debian package prometheus; scripts/install-deps.sh installs it)")
    for tls in (False, True):
        text = scrape(srv, tls)
        r = subprocess.run([PROMTOOL, "check", "metrics"], input=text.encode(),
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=t(30))
        out = r.stdout.decode("utf-8", "replace").strip()
        check(r.returncode == 0 and out == "",
              "promtool check metrics (exit %d):\n%s\n%s" % (r.returncode, out,
                                                           indent("exposition", text)))
    samples = parse(text)
    expiry = value(samples, "gpuadmit_serving_certificate_expiry_timestamp_seconds")
    check(expiry > time.time() + 300 * 86400, "certificate expiry %r is not about a year ahead"
          % expiry)
    # every review answered is in the histogram, and nothing else is
    for ep in ("mutate", "validate"):
        reviews = sum(v for (n, labels), v in samples.items()
                      if n == REQ and ("endpoint", ep) in labels)
        eq(value(samples, HIST + "_count", endpoint=ep), reviews,
           "%s histogram count vs requests" % ep)


# ---------------------------------------------------------------------------------------------


@test
def clean_stop():
    E.srv.check_clean_exit(E.srv.stop(t(10)))


def setup(work):
    check(os.access(BIN, os.X_OK), "GPUADMIT_BIN=%s is not an executable" % BIN)
    E.work, E.certs = work, make_certs(os.path.join(work, "pki"))
    E.srv = Server(work, E.certs).start()


def main():
    try:
        return run_suite("e2e-metrics", TESTS, SUITE_LIMIT_S, setup)
    finally:
        if getattr(E, "srv", None) is not None:
            E.srv.kill()


if __name__ == "__main__":
    sys.exit(main())
