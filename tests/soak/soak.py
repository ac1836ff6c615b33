#!/usr/bin/env python3
"""make soak: gpuadmit under hours' worth of everything at once, compressed into minutes.

    GPUADMIT_BIN=build/release/gpuadmit python3 tests/soak/soak.py [--seconds N]
    GPUADMIT_BIN=build/release/gpuadmit python3 tests/soak/soak.py --valgrind [--seconds N]

The real binary (`gpuadmit serve --kubeconfig`) runs against the simulated kube-apiserver of
tests/e2e/fake_apiserver.py for SOAK_SECONDS (default 600; SOAK_VALGRIND_SECONDS, default 60,
with --valgrind) while, all at once:

  * valid reviews on keep-alive connections: pods (GPU and not, v1 and v1beta1) and workloads
    (Deployment, ReplicaSet, StatefulSet, Job, deployments/scale) at /mutate and /validate,
    each answer checked (HTTP 200, AdmissionReview, uid, allowed, the verdict);
  * connection churn: a new TLS connection per review, half of them resuming a session;
  * malformed bodies (400), oversized bodies (413, three ways), a wrong Content-Type (415);
  * slow clients (no handshake, a stalled head, a trickled head or body) that the server must
    close within --idle-timeout + --request-timeout, beside the valid traffic;
  * every few seconds: the rule file replaced (alternating between two policies that judge the
    soak's reviews alike, and now and then a broken one, refused, then fixed), the serving
    certificate replaced (a new pair from the same CA, as a Secret volume's symlink swap or two
    renames; now and then a broken pair, refused), and the simulated apiserver dropping,
    stalling, resetting, expiring and corrupting watches while pods come and go.

The server's resident memory and open descriptors are sampled every second. It passes when no
valid request failed, every error answer was the expected one, slow clients were cut in time,
every rule and certificate change took effect (or was refused), the process is the one that
started and stops cleanly, resident memory grew under 5 % from the end of the warm-up to the
end of the load, the descriptors came back to their starting count, the cluster view matches
the simulated cluster, and /metrics agrees with the client's counts. With --valgrind the server
runs under memcheck (lower load, longer timeouts, no memory criterion) and valgrind must report
no error and no definite or indirect leak.

Python 3 standard library only. Prints a summary and exits 0 only when every criterion holds.
"""
import argparse
import base64
import collections
import copy
import hashlib
import http.client
import json
import os
import random
import re
import select
import shutil
import socket
import ssl
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import traceback

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tests", "e2e"))
from common import (CertPair, SERVICE_DNS, ServerProcess, check_json_log,  # noqa: E402
                    check_no_sanitizer_report, tls_connect)
from fake_apiserver import FakeAPIServer  # noqa: E402
from test_kube import (expected_view, mk_class, mk_node, mk_pod, mk_workload,  # noqa: E402
                       normalise, view_diff)

BIN = os.path.abspath(os.environ.get("GPUADMIT_BIN", os.path.join(ROOT, "build/release/gpuadmit")))
RULES = os.path.join(ROOT, "rules", "default.yaml")
K8S = os.path.join(ROOT, "tests", "data", "k8s")  # Kubernetes' own objects (its README)
TOKEN = "soak-token-5f0c2e9d"
GPU = "nvidia.com/gpu"
MIB = 1024 * 1024
RSS_GROWTH_MAX = 0.05
JSON_CT = "application/json"
UID_MARK = "@@UID@@"
REFUSED_RULES = "policy refused; the last good policy stays in force"
CERT_RELOADED = "serving certificate reloaded"
CERT_REFUSED = "new serving certificate refused; the previous one stays in use"


class Profile:
    """Load and timeouts. Under valgrind everything is ~30x slower: fewer workers, pauses
    between requests, longer server and client timeouts."""

    def __init__(self, valgrind):
        self.valgrind = valgrind
        self.idle_timeout = 10 if valgrind else 2        # --idle-timeout
        self.request_timeout = 10 if valgrind else 3     # --request-timeout
        self.watch_timeout = 10 if valgrind else 5       # --watch-timeout
        self.max_body = MIB                              # --max-body-bytes
        self.client_timeout = 60.0 if valgrind else 15.0
        self.keepalive_workers = 1 if valgrind else 2
        self.churn_workers = 1
        self.pause = 0.05 if valgrind else 0.01          # between valid reviews
        self.churn_pause = 0.3 if valgrind else 0.02
        self.bad_pause = 0.5 if valgrind else 0.1
        self.slow_max = 3 if valgrind else 6             # slow connections open at once
        self.slow_every = 2.0 if valgrind else 0.5       # a new slow client every
        self.slow_slack = 15.0 if valgrind else 5.0      # past idle + request timeout
        self.rules_every = 8.0 if valgrind else 3.0
        self.cert_every = 10.0 if valgrind else 5.0
        self.fault_every = 5.0 if valgrind else 4.0
        self.cluster_every = 1.0 if valgrind else 0.3
        self.change_wait = 30.0 if valgrind else 5.0     # a rule or cert change shows in the log
        self.stall_s = self.watch_timeout + 4            # a stalled watch outlives its silence
        self.settle_max = 90.0 if valgrind else 30.0     # for the descriptors to come back
        self.serving_wait = 120.0 if valgrind else 15.0
        self.stop_wait = 120.0 if valgrind else 20.0


# ---------------------------------------------------------------------------------------------
# bookkeeping


class Stats:
    """Counters by name, and failures by criterion with their first few examples."""

    def __init__(self):
        self.lock = threading.Lock()
        self.n = collections.Counter()
        self.fail = collections.Counter()
        self.examples = collections.defaultdict(list)

    def add(self, name, k=1):
        with self.lock:
            self.n[name] += k

    def failed(self, criterion, example):
        with self.lock:
            self.fail[criterion] += 1
            if len(self.examples[criterion]) < 5:
                self.examples[criterion].append("%.1fs %s" % (time.monotonic() - T0[0], example))

    def get(self, name):
        with self.lock:
            return self.n[name]


T0 = [time.monotonic()]
STATS = Stats()
STOP = threading.Event()


def guarded(criterion):
    """A worker body whose unexpected exception is a failure of criterion, not a silent end."""
    def wrap(fn):
        def run(*a):
            try:
                fn(*a)
            except Exception as e:
                STATS.failed(criterion, "%s crashed: %r\n%s" % (fn.__name__, e,
                                                                traceback.format_exc()))
        return run
    return wrap


def sleep_unless_stopped(s):
    STOP.wait(s)
    return not STOP.is_set()


# ---------------------------------------------------------------------------------------------
# the reviews


def review(obj, uid, kind, resource, group="", version="v1", op="CREATE", ns="ml",
           api="admission.k8s.io/v1", old=None, sub=None, dry_run=False):
    gvk = {"group": group, "version": version, "kind": kind}
    gvr = {"group": group, "version": version, "resource": resource}
    req = {"uid": uid, "kind": gvk, "resource": gvr, "requestKind": gvk, "requestResource": gvr,
           "name": obj.get("metadata", {}).get("name", ""), "namespace": ns, "operation": op,
           "userInfo": {"username": "system:serviceaccount:ml:deployer",
                        "groups": ["system:serviceaccounts", "system:authenticated"]},
           "object": obj, "oldObject": old, "dryRun": dry_run,
           "options": {"apiVersion": "meta.k8s.io/v1",
                       "kind": "CreateOptions" if op == "CREATE" else "UpdateOptions"}}
    if sub:
        req["subResource"] = sub
    return {"apiVersion": api, "kind": "AdmissionReview", "request": req}


TOLERATION = {"key": GPU, "operator": "Exists", "effect": "NoSchedule"}
SELECTOR = {"nvidia.com/gpu.present": "true"}


def pod_spec(gpus, complete):
    res = {"limits": {"cpu": "2", "memory": "4Gi"}, "requests": {"cpu": "1", "memory": "2Gi"}}
    if gpus:
        res["limits"][GPU] = str(gpus)
    spec = {"containers": [{"name": "main", "image": "trainer:1", "resources": res},
                           {"name": "sidecar", "image": "log:1",
                            "resources": {"limits": {"cpu": "100m", "memory": "64Mi"}}}],
            "restartPolicy": "Always"}
    if complete:
        spec.update(priorityClassName="gpu-standard", priority=100000,
                    tolerations=[TOLERATION], nodeSelector=dict(SELECTOR))
    return spec


def pod(name, gpus, complete, ns="ml"):
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": ns, "labels": {"app": name}},
            "spec": pod_spec(gpus, complete)}


WORKLOADS = {  # kind -> (group, resource, apiVersion)
    "Deployment": ("apps", "deployments", "apps/v1"),
    "ReplicaSet": ("apps", "replicasets", "apps/v1"),
    "StatefulSet": ("apps", "statefulsets", "apps/v1"),
    "Job": ("batch", "jobs", "batch/v1"),
}


def workload(kind, name, complete, replicas=2):
    spec = pod_spec(1, complete)
    spec.pop("priority", None)  # a template carries the class; the apiserver fills in priority
    if kind == "Job":
        spec["restartPolicy"] = "Never"
    tmpl = {"metadata": {"labels": {"app": name}}, "spec": spec}
    body = {"template": tmpl, "selector": {"matchLabels": {"app": name}}}
    if kind == "Job":
        body.update(parallelism=replicas, completions=replicas)
        del body["selector"]
    else:
        body["replicas"] = replicas
    if kind == "StatefulSet":
        body["serviceName"] = name
    return {"apiVersion": WORKLOADS[kind][2], "kind": kind,
            "metadata": {"name": name, "namespace": "ml"}, "spec": body}


def scale_obj(name, replicas, before):
    return {"apiVersion": "autoscaling/v1", "kind": "Scale",
            "metadata": {"name": name, "namespace": "ml"}, "spec": {"replicas": replicas},
            "status": {"replicas": before, "selector": "app=" + name}}


class Case:
    """One valid review, encoded once with a uid placeholder. expect: None (protocol only) or
    (allowed, patched)."""

    def __init__(self, category, name, path, doc, expect):
        self.category, self.name, self.path, self.expect = category, name, path, expect
        self.api = doc["apiVersion"]
        doc = copy.deepcopy(doc)
        doc["request"]["uid"] = UID_MARK
        self.text = json.dumps(doc, separators=(",", ":"))
        if self.text.count(UID_MARK) != 1:
            raise RuntimeError("case %s: the uid placeholder is not unique" % name)

    def body(self, uid):
        return self.text.replace(UID_MARK, uid, 1).encode()


def valid_cases():
    """The soak's valid reviews and their verdicts under rules/default.yaml (and under its
    variant, which judges them alike)."""
    cases = []
    pods = [("pod-cpu", pod("web-0", 0, False, ns="web"), (True, False), (True, False)),
            ("pod-gpu-complete", pod("trainer-0", 1, True), (True, False), (True, False)),
            ("pod-gpu-bare", pod("bare-0", 1, False), (True, True), (False, False))]
    for name, obj, at_mutate, at_validate in pods:
        ns = obj["metadata"]["namespace"]
        for api in ("admission.k8s.io/v1", "admission.k8s.io/v1beta1"):
            doc = review(obj, "", "Pod", "pods", ns=ns, api=api)
            tag = name + ("" if api.endswith("/v1") else "-v1beta1")
            cases.append(Case("pod", tag, "/mutate", doc, at_mutate))
            cases.append(Case("pod", tag, "/validate", doc, at_validate))
    for kind, (group, resource, _) in WORKLOADS.items():
        for complete in (True, False):
            for dry in (True, False):
                name = "%s-%s" % (kind.lower(), "complete" if complete else "bare")
                doc = review(workload(kind, name, complete), "", kind, resource, group=group,
                             dry_run=dry)
                tag = name + ("-dry" if dry else "")
                cases.append(Case("workload", tag, "/mutate", doc,
                                  (True, False) if complete else (True, True)))
                cases.append(Case("workload", tag, "/validate", doc,
                                  (True, False) if complete else (False, False)))
    for path in ("/mutate", "/validate"):
        doc = review(scale_obj("trainer", 3, 2), "", "Scale", "deployments", group="apps",
                     op="UPDATE", old=scale_obj("trainer", 2, 2), sub="scale")
        doc["request"]["kind"] = {"group": "autoscaling", "version": "v1", "kind": "Scale"}
        cases.append(Case("workload", "deployment-scale-2-to-3", path, doc, (True, False)))
    cases += k8s_fixture_cases()
    return cases


def k8s_fixture_cases():
    """Kubernetes' own objects (tests/data/k8s): protocol checks only (their verdicts are the
    policy suites' business)."""
    out = []
    kw = os.path.join(K8S, "admission-examples", "kubewarden-pod-create-admissionreview.json")
    with open(kw) as f:
        doc = json.load(f)
    for path in ("/mutate", "/validate"):
        out.append(Case("pod", "kubewarden-fixture", path, doc, None))
    for fname, kind in (("core.v1.Pod.json", "Pod"), ("apps.v1.Deployment.json", "Deployment")):
        with open(os.path.join(K8S, "testdata", fname)) as f:
            obj = json.load(f)
        group, resource = ("", "pods") if kind == "Pod" else ("apps", "deployments")
        ns = obj.get("metadata", {}).get("namespace") or "default"
        doc = review(obj, "", kind, resource, group=group, ns=ns)
        for path in ("/mutate", "/validate"):
            out.append(Case("pod" if kind == "Pod" else "workload", "all-fields-" + kind, path,
                            doc, None))
    return out


def check_answer(case, uid, status, ctype, body):
    """None when the answer to case is right, else what is wrong."""
    if status != 200:
        return "HTTP %d %r" % (status, body[:200])
    if not (ctype or "").startswith(JSON_CT):
        return "Content-Type %r" % ctype
    try:
        doc = json.loads(body)
    except ValueError:
        return "not JSON: %r" % body[:200]
    if doc.get("apiVersion") != case.api or doc.get("kind") != "AdmissionReview":
        return "apiVersion/kind %r/%r" % (doc.get("apiVersion"), doc.get("kind"))
    r = doc.get("response")
    if not isinstance(r, dict):
        return "no response object: %r" % body[:200]
    if r.get("uid") != uid:
        return "uid %r, sent %r" % (r.get("uid"), uid)
    if not isinstance(r.get("allowed"), bool):
        return "allowed is %r" % r.get("allowed")
    if ("patch" in r) != ("patchType" in r):
        return "patch without patchType or the reverse: %r" % r
    if case.path == "/validate" and "patch" in r:
        return "a patch at /validate"
    if "patch" in r:
        try:
            ops = json.loads(base64.b64decode(r["patch"], validate=True))
        except ValueError:
            return "patch is not base64 JSON"
        if not isinstance(ops, list) or not ops:
            return "patch is not a non-empty list"
    if not r["allowed"]:
        st = r.get("status") or {}
        if st.get("code") != 403 or not st.get("message"):
            return "a denial without status 403 and a message: %r" % r
    if case.expect is not None:
        allowed, patched = case.expect
        if r["allowed"] != allowed or ("patch" in r) != patched:
            return "expected allowed=%s patched=%s, got allowed=%s patch=%s (%s)" % (
                allowed, patched, r["allowed"], "patch" in r,
                (r.get("status") or {}).get("message", ""))
    return None


# ---------------------------------------------------------------------------------------------
# clients


class Env:
    """What the workers share: the port, the CA, the profile."""
    port = None
    ctx = None
    prof = None
    cases = None
    server = None


E = Env()


class Conn(http.client.HTTPSConnection):
    """HTTPS to the server, verified against the run's CA and the Service DNS name."""

    def __init__(self, timeout=None):
        super().__init__(SERVICE_DNS, E.port, context=E.ctx,
                         timeout=timeout or E.prof.client_timeout)
        self.last_used = 0.0
        self.connects = 0

    def connect(self):
        self.sock = tls_connect(self.port, E.ctx, self.timeout)
        self.connects += 1


def post(conn, path, body, ctype=JSON_CT):
    conn.request("POST", path, body=body, headers={"Content-Type": ctype})
    r = conn.getresponse()
    data = r.read()
    conn.last_used = time.monotonic()
    if r.will_close:
        conn.close()
    return r.status, r.getheader("Content-Type"), data


def keepalive_post(conn, path, body, ctype=JSON_CT):
    """post() on a kept-alive connection, reopened first when it has idled for half the
    server's idle timeout (as a client whose own idle timeout is shorter does). The client can
    still stall (2 cores, shared, a dozen threads) between that check and the send, past the
    server's timeout: then the server closed an idle connection as it should, and the request
    is sent again on a new one. Only that case: the time from the last answer to the moment
    the request was handed to the kernel must reach --idle-timeout, and nothing may have come
    back; anything else is raised."""
    if conn.sock is not None and time.monotonic() - conn.last_used > E.prof.idle_timeout / 2:
        conn.close()
    reused = conn.sock is not None
    conn.request("POST", path, body=body, headers={"Content-Type": ctype})
    idle = time.monotonic() - conn.last_used
    try:
        r = conn.getresponse()
        data = r.read()
    except (ConnectionError, ssl.SSLError, http.client.RemoteDisconnected) as e:
        conn.close()
        if not reused or idle < E.prof.idle_timeout:
            raise
        STATS.add("keep-alive closed idle under a stalled client")
        with STALL_LOCK:
            STALLS.append("%.1f s idle: %r" % (idle, e))
        return post(conn, path, body, ctype)
    conn.last_used = time.monotonic()
    if r.will_close:
        conn.close()
    return r.status, r.getheader("Content-Type"), data


STALLS = []
STALL_LOCK = threading.Lock()


def get(path, timeout=None):
    c = Conn(timeout)
    try:
        c.request("GET", path)
        r = c.getresponse()
        return r.status, r.read()
    finally:
        c.close()


def read_http_response(sock, deadline):
    """(status, headers dict, body) of one response with a Content-Length read from sock;
    ValueError when the connection ends first."""
    buf = b""
    while b"\r\n\r\n" not in buf:
        sock.settimeout(max(0.05, deadline - time.monotonic()))
        more = sock.recv(65536)
        if not more:
            raise ValueError("closed before a response head (%d bytes)" % len(buf))
        buf += more
    head, _, rest = buf.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split(" ", 2)[1])
    headers = {}
    for line in lines[1:]:
        k, _, v = line.partition(":")
        headers[k.strip().lower()] = v.strip()
    n = int(headers.get("content-length", "0"))
    while len(rest) < n:
        sock.settimeout(max(0.05, deadline - time.monotonic()))
        more = sock.recv(65536)
        if not more:
            raise ValueError("closed in the body (%d of %d bytes)" % (len(rest), n))
        rest += more
    return status, headers, rest[:n]


def readable(sock):
    if sock.pending():
        return True
    r, _, _ = select.select([sock], [], [], 0)
    return bool(r)


# ---------------------------------------------------------------------------------------------
# load workers


@guarded("valid requests")
def keepalive_worker(k):
    """Valid reviews on one keep-alive connection (keepalive_post)."""
    rng = random.Random(1000 + k)
    conn = Conn()
    i = 0
    try:
        while not STOP.is_set():
            case = rng.choice(E.cases)
            uid = "soak-ka%d-%d-%s" % (k, i, case.name)
            i += 1
            try:
                status, ctype, body = keepalive_post(conn, case.path, case.body(uid))
                why = check_answer(case, uid, status, ctype, body)
            except Exception as e:
                why = "%s: %r" % (type(e).__name__, e)
                conn.close()
            if why is None:
                STATS.add("valid %s" % case.category)
            else:
                STATS.add("valid %s failed" % case.category)
                STATS.failed("valid requests", "%s %s (keep-alive): %s" % (case.path, uid, why))
            if E.prof.pause:
                STOP.wait(E.prof.pause)
    finally:
        STATS.add("keep-alive connections", conn.connects)
        conn.close()


CERT_DERS = {}  # sha256 of a certificate served -> first seen (monotonic)
CERT_LOCK = threading.Lock()


def note_cert(sock):
    der = sock.getpeercert(binary_form=True)
    if der:
        h = hashlib.sha256(der).hexdigest()
        with CERT_LOCK:
            CERT_DERS.setdefault(h, time.monotonic())
        return h
    return None


@guarded("valid requests")
def churn_worker(k):
    """A new TLS connection per review: full handshakes and resumed sessions in turn, closed
    with close_notify or dropped; now and then a handshake with no request at all."""
    rng = random.Random(2000 + k)
    session = None
    i = 0
    pods = [c for c in E.cases if c.category == "pod" and c.expect is not None]
    while not STOP.is_set():
        i += 1
        resume = i % 2 == 0 and session is not None
        case = rng.choice(pods)
        uid = "soak-churn%d-%d" % (k, i)
        raw = None
        sock = None
        why = None
        try:
            raw = socket.create_connection(("127.0.0.1", E.port), timeout=E.prof.client_timeout)
            raw.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            sock = E.ctx.wrap_socket(raw, server_hostname=SERVICE_DNS,
                                     session=session if resume else None)
            raw = None
            STATS.add("churn handshakes")
            if sock.session_reused:
                STATS.add("churn handshakes resumed")
            elif resume:
                STATS.add("churn resumption declined")
            note_cert(sock)
            if i % 10 == 0:
                STATS.add("churn handshake-only")
            else:
                body = case.body(uid)
                sock.sendall(("POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: %s\r\n"
                              "Content-Length: %d\r\n\r\n" % (case.path, SERVICE_DNS, JSON_CT,
                                                              len(body))).encode() + body)
                st, hd, data = read_http_response(sock, time.monotonic() +
                                                  E.prof.client_timeout)
                why = check_answer(case, uid, st, hd.get("content-type"), data)
                if why is None:
                    STATS.add("valid pod")
                    STATS.add("valid via churn")
                session = sock.session or session
            if i % 3 == 0:
                try:
                    sock.unwrap()  # close_notify
                except (OSError, ValueError, ssl.SSLError):
                    pass
        except Exception as e:
            why = "%s: %r" % (type(e).__name__, e)
        finally:
            for s in (sock, raw):
                if s is not None:
                    s.close()
        if why is not None:
            STATS.add("valid pod failed")
            STATS.failed("valid requests", "%s %s (new connection, %s): %s"
                         % (case.path, uid, "resumed" if resume else "full", why))
        STOP.wait(E.prof.churn_pause)


def bad_bodies():
    good = json.loads(E.cases[0].text)
    wrong_kind = copy.deepcopy(good)
    wrong_kind["kind"] = "Pod"
    no_uid = copy.deepcopy(good)
    del no_uid["request"]["uid"]
    return [
        ("malformed: not JSON", b'{"apiVersion": "admission.k8s.io/v1", "kind": ', JSON_CT, 400),
        ("malformed: wrong kind", json.dumps(wrong_kind).encode(), JSON_CT, 400),
        ("malformed: no uid", json.dumps(no_uid).encode(), JSON_CT, 400),
        ("malformed: not an object", b"[1, 2, 3]", JSON_CT, 400),
        ("wrong type: text/plain", E.cases[0].body("soak-bad-ct"), "text/plain", 415),
        ("wrong type: form", b"a=b", "application/x-www-form-urlencoded", 415),
    ]


@guarded("error answers")
def bad_worker():
    """Requests that must be refused, each with its status; a keep-alive connection for the
    small ones (the server keeps it open after a small refused body)."""
    rng = random.Random(3000)
    conn = Conn()
    small = bad_bodies()
    i = 0
    try:
        while not STOP.is_set():
            i += 1
            if i % 8 == 0:
                oversized(i)
            else:
                name, body, ct, want = rng.choice(small)
                path = rng.choice(("/mutate", "/validate"))
                try:
                    st, _, data = keepalive_post(conn, path, body, ct)
                except Exception as e:
                    st, data = None, repr(e).encode()
                    conn.close()
                STATS.add(name)
                STATS.add("expect %d" % want)
                if st != want:
                    STATS.failed("error answers", "%s at %s: got %s %r, want %d"
                                 % (name, path, st, data[:200], want))
            STOP.wait(E.prof.bad_pause)
    finally:
        conn.close()


def oversized(i):
    """A body past --max-body-bytes, three ways: chunked (read, dropped, 413), announced with
    Expect: 100-continue (413 at once, nothing sent), announced and sent regardless (413, or
    a connection closed under the client: the server stops reading)."""
    size = E.prof.max_body + MIB // 4
    way = ("chunked", "expect", "announced")[(i // 8) % 3]
    name = "oversized: " + way
    STATS.add(name)
    STATS.add("expect 413")
    deadline = time.monotonic() + E.prof.client_timeout
    sock = tls_connect(E.port, E.ctx, E.prof.client_timeout)
    got = None
    try:
        head = "POST /validate HTTP/1.1\r\nHost: %s\r\nContent-Type: %s\r\n" % (SERVICE_DNS,
                                                                               JSON_CT)
        if way == "chunked":
            sock.sendall((head + "Transfer-Encoding: chunked\r\n\r\n").encode())
            piece = b" " * 65536
            sent = 0
            while sent < size:
                sock.sendall(b"%x\r\n%s\r\n" % (len(piece), piece))
                sent += len(piece)
            sock.sendall(b"0\r\n\r\n")
            got = read_http_response(sock, deadline)[0]
        elif way == "expect":
            sock.sendall((head + "Content-Length: %d\r\nExpect: 100-continue\r\n\r\n"
                          % size).encode())
            got = read_http_response(sock, deadline)[0]
        else:
            sock.sendall((head + "Content-Length: %d\r\n\r\n" % size).encode())
            piece = b" " * 65536
            sent = 0
            try:
                while sent < size and not readable(sock):
                    sock.sendall(piece)
                    sent += len(piece)
                got = read_http_response(sock, deadline)[0]
            except (ConnectionError, ssl.SSLError, ValueError, socket.timeout):
                got = "closed"
                STATS.add("oversized: announced, closed under the client")
    except Exception as e:
        got = repr(e)
    finally:
        sock.close()
    if got not in (413, "closed"):
        STATS.failed("error answers", "%s: got %r, want 413" % (name, got))


SLOW_KINDS = ("no handshake", "handshake then silence", "stalled head", "trickled head",
              "trickled body")


@guarded("slow clients cut")
def slow_spawner():
    """Keeps up to slow_max slow clients open, one kind after another."""
    active = threading.BoundedSemaphore(E.prof.slow_max)
    threads = []
    i = 0
    while not STOP.is_set():
        if active.acquire(timeout=0.2):
            kind = SLOW_KINDS[i % len(SLOW_KINDS)]
            i += 1
            th = threading.Thread(target=slow_client, args=(kind, active), daemon=True)
            th.start()
            threads.append(th)
            threads = [t for t in threads if t.is_alive()]
            STOP.wait(E.prof.slow_every)
    for th in threads:
        th.join(E.prof.idle_timeout + E.prof.request_timeout + E.prof.slow_slack + 5)


def slow_client(kind, active):
    limit = E.prof.idle_timeout + E.prof.request_timeout + E.prof.slow_slack
    t0 = time.monotonic()
    wall0 = time.time()
    sock = None
    closed = False
    port = None
    try:
        sock = socket.create_connection(("127.0.0.1", E.port), timeout=E.prof.client_timeout)
        port = sock.getsockname()[1]
        if kind != "no handshake":
            sock = E.ctx.wrap_socket(sock, server_hostname=SERVICE_DNS)
        head = ("POST /validate HTTP/1.1\r\nHost: %s\r\nContent-Type: %s\r\nContent-Length: 4096"
                "\r\n\r\n" % (SERVICE_DNS, JSON_CT)).encode()
        if kind in ("stalled head", "trickled head"):
            sock.sendall(head[:30])
        elif kind == "trickled body":
            sock.sendall(head + b"{")
        trickle = head[30:] if kind == "trickled head" else b" " * 4000
        step = 0
        # past the limit, the client still waits a while: a stall of its own (it is one of a
        # dozen threads on 2 shared cores) must not pass for a connection left open
        while time.monotonic() - t0 < limit + E.prof.slow_slack:
            # wait for the end of the stream, sending a byte every third of the idle timeout
            sock.settimeout(E.prof.idle_timeout / 3)
            try:
                data = sock.recv(4096)
                if not data:
                    closed = True
                    break
                if kind == "no handshake" and data.startswith(b"\x15\x03"):
                    STATS.add("slow: TLS alert")  # the server's close_notify, then the close
                else:
                    STATS.add("slow: answered")  # an HTTP answer, then (below) the close
                continue
            except socket.timeout:
                pass
            except (ConnectionError, ssl.SSLError, OSError):
                closed = True
                break
            if kind in ("trickled head", "trickled body") and step < len(trickle):
                try:
                    sock.sendall(trickle[step:step + 1])
                    step += 1
                except (ConnectionError, ssl.SSLError, OSError):
                    closed = True
                    break
    except (ConnectionError, ssl.SSLError, OSError) as e:
        # a handshake cut short is a close too, if it took the server its timeout
        closed = not isinstance(e, socket.timeout)
    finally:
        if sock is not None:
            sock.close()
        active.release()
    took = time.monotonic() - t0
    STATS.add("slow: " + kind)
    if not closed or took > limit:
        STATS.failed("slow clients cut", "%s (port %s, opened %s): %s after %.1f s (limit "
                     "%.1f s)" % (kind, port, time.strftime("%H:%M:%S", time.gmtime(wall0)),
                                  "closed" if closed else "still open", took, limit))
    else:
        with SLOW_LOCK:
            SLOW_TIMES.append(took)


SLOW_TIMES = []
SLOW_LOCK = threading.Lock()


@guarded("valid requests")
def scraper():
    """GET /metrics every few seconds on a new connection (Prometheus' way)."""
    while sleep_unless_stopped(5.0):
        try:
            st, body = get("/metrics")
            ok = st == 200 and b"gpuadmit_admission_requests_total" in body
        except Exception as e:
            ok, st = False, repr(e)
        STATS.add("metrics scrapes")
        if not ok:
            STATS.failed("valid requests", "GET /metrics: %s" % st)


# ---------------------------------------------------------------------------------------------
# chaos: rules, certificate, watches, cluster


class LogTail:
    """The server's log events from an offset on, for one chaos thread."""

    def __init__(self, srv):
        self.srv = srv

    def wait(self, pred, since, timeout):
        deadline = time.monotonic() + timeout
        while True:
            for ev in self.srv.events(since):
                if pred(ev):
                    return ev
            if time.monotonic() >= deadline or self.srv.proc.poll() is not None:
                return None
            time.sleep(0.05)


def install_file(path, text, tmpdir):
    """Replaces path atomically: a temp file outside the watched folder, then rename."""
    fd, tmp = tempfile.mkstemp(dir=tmpdir, prefix=".edit.")
    with os.fdopen(fd, "w" if isinstance(text, str) else "wb") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.rename(tmp, path)


class RulesChaos:
    """Replaces rules/default.yaml every rules_every seconds: the default policy, a variant that
    judges the soak's reviews alike (maxPerPod, the class's preemption policy and the capacity
    rule's enforcement differ), and every third change a broken file (a bad enum value, or a
    YAML syntax error) that must be refused while the last good policy stays in force."""

    def __init__(self, work, rules_dir, srv):
        self.dir, self.tmp, self.log = rules_dir, work, LogTail(srv)
        self.path = os.path.join(rules_dir, "default.yaml")
        with open(RULES) as f:
            self.a = f.read()
        for needle in ("maxPerPod: 8", "action: Deny", "available: Warn"):
            if needle not in self.a:
                raise RuntimeError("rules/default.yaml changed: no %r; update the soak" % needle)
        self.b = "# soak variant B\n" + self.a.replace("maxPerPod: 8", "maxPerPod: 6")
        self.broken = [self.a.replace("action: Deny", "action: Dney", 1),
                       self.a.replace("type: gpu-request", "type: gpu-request: [", 1)]
        self.last_good = self.a
        self.state_good = True

    def step(self, i):
        if i % 3 == 2:
            text, good = self.broken[(i // 3) % 2], False
        else:
            text, good = (self.b if self.last_good == self.a else self.a), True
        since = self.log.srv.log_size()
        t0 = time.monotonic()
        install_file(self.path, text, self.tmp)
        want = "policy reloaded" if good else REFUSED_RULES
        other = REFUSED_RULES if good else "policy reloaded"
        ev = self.log.wait(lambda e: e.get("msg") in (want, other), since,
                           E.prof.change_wait)
        if ev is None:
            STATS.failed("rule changes", "no %r within %.0f s of change %d"
                         % (want, E.prof.change_wait, i))
        elif ev.get("msg") != want:
            STATS.failed("rule changes", "change %d (%s): %r: %s"
                         % (i, "good" if good else "broken", ev.get("msg"), ev.get("error", "")))
        else:
            STATS.add("rule reloads ok" if good else "rule reloads refused")
            STATS.add("rule reload seconds x1000", int((time.monotonic() - t0) * 1000))
        if good:
            self.last_good = text
        self.state_good = good

    def restore(self):
        """A good policy in force at the end."""
        if not self.state_good:
            self.step(0)

    @guarded("rule changes")
    def run(self):
        i = 0
        while sleep_unless_stopped(E.prof.rules_every):
            self.step(i)
            i += 1
        self.restore()


class CertChaos:
    """Replaces the serving certificate every cert_every seconds with a new pair from the same
    CA (gpuadmit certs --renew): as a Kubernetes Secret volume does (the ..data symlink swapped
    in one rename) or as a script might (certificate, then key: the server may see the mismatch
    in between and refuse it until the key follows). Every fourth change is a broken pair (a
    certificate with another key, or not PEM at all), which must be refused while the previous
    pair stays in use."""

    def __init__(self, work, srv, staging, serving):
        self.work, self.log, self.staging, self.serving = work, LogTail(srv), staging, serving
        self.gen = 0
        self.current = None  # sha256 of the certificate in force
        self.state_good = True

    @staticmethod
    def setup(staging, serving):
        """The Secret volume layout: tls.crt -> ..data/tls.crt, ..data -> ..gen-0/."""
        os.makedirs(serving)
        CertChaos.write_gen(serving, 0, read(os.path.join(staging, "tls.crt")),
                            read(os.path.join(staging, "tls.key")))
        os.symlink("..gen-0", os.path.join(serving, "..data"))
        for n in ("tls.crt", "tls.key"):
            os.symlink(os.path.join("..data", n), os.path.join(serving, n))
        return os.path.join(serving, "tls.crt"), os.path.join(serving, "tls.key")

    @staticmethod
    def write_gen(serving, gen, crt, key):
        d = os.path.join(serving, "..gen-%d" % gen)
        os.makedirs(d)
        for n, data in (("tls.crt", crt), ("tls.key", key)):
            with open(os.path.join(d, n), "wb") as f:
                f.write(data)
            os.chmod(os.path.join(d, n), 0o600)

    def renew(self):
        r = subprocess.run([BIN, "certs", "--renew", "--out", self.staging],
                           capture_output=True, timeout=60)
        if r.returncode != 0:
            raise RuntimeError("gpuadmit certs --renew: %s" % r.stderr.decode())
        return read(os.path.join(self.staging, "tls.crt")), read(os.path.join(self.staging,
                                                                                "tls.key"))

    def swap(self, crt, key):
        old = os.readlink(os.path.join(self.serving, "..data"))
        self.gen += 1
        self.write_gen(self.serving, self.gen, crt, key)
        tmp = os.path.join(self.serving, "..data_tmp")
        os.symlink("..gen-%d" % self.gen, tmp)
        os.rename(tmp, os.path.join(self.serving, "..data"))
        shutil.rmtree(os.path.join(self.serving, old))

    def two_renames(self, crt, key):
        d = os.path.join(self.serving, os.readlink(os.path.join(self.serving, "..data")))
        install_file(os.path.join(d, "tls.crt"), crt, self.work)
        time.sleep(0.2)
        install_file(os.path.join(d, "tls.key"), key, self.work)

    def step(self, i):
        old_key = read(os.path.join(self.serving, "tls.key"))
        crt, key = self.renew()
        broken = i % 4 == 3
        if broken:
            crt, key = ((crt, old_key) if (i // 4) % 2 == 0 else
                        (b"-----BEGIN CERTIFICATE-----\nbm90IGEgY2VydGlmaWNhdGU=\n"
                         b"-----END CERTIFICATE-----\n", key))
        since = self.log.srv.log_size()
        how = "swap" if i % 2 == 0 or broken else "two renames"
        (self.swap if how == "swap" else self.two_renames)(crt, key)
        want = CERT_REFUSED if broken else CERT_RELOADED
        ev = self.log.wait(lambda e: e.get("msg") == want, since, E.prof.change_wait)
        if ev is None:
            STATS.failed("certificate changes", "change %d (%s, %s): no %r within %.0f s"
                         % (i, "broken" if broken else "good", how, want, E.prof.change_wait))
            return
        if broken:
            STATS.add("cert reloads refused")
            self.state_good = False
            return
        self.state_good = True
        STATS.add("cert reloads ok (%s)" % how)
        # new connections get the new certificate
        want_h = hashlib.sha256(ssl.PEM_cert_to_DER_cert(crt.decode())).hexdigest()
        deadline = time.monotonic() + E.prof.change_wait
        seen = None
        while time.monotonic() < deadline:
            try:
                s = tls_connect(E.port, E.ctx, E.prof.client_timeout)
                seen = note_cert(s)
                s.close()
            except (OSError, ssl.SSLError) as e:
                STATS.failed("certificate changes", "handshake after change %d: %r" % (i, e))
                return
            if seen == want_h:
                break
            time.sleep(0.1)
        if seen != want_h:
            STATS.failed("certificate changes", "change %d: new connections still get the "
                         "old certificate after %.0f s" % (i, E.prof.change_wait))
        self.current = want_h

    def restore(self):
        if not self.state_good:
            self.step(0)

    @guarded("certificate changes")
    def run(self):
        i = 0
        while sleep_unless_stopped(E.prof.cert_every):
            self.step(i)
            i += 1
        self.restore()


KINDS = ("nodes", "pods", "priorityclasses", "replicasets", "deployments", "statefulsets", "jobs")


class WatchChaos:
    """Every fault_every seconds one fault from the simulated apiserver's repertoire."""

    def __init__(self, fake):
        self.fake = fake
        self.rng = random.Random(4000)

    def step(self, i):
        f = self.fake
        kind = self.rng.choice(KINDS)
        what = ("drop all", "expire (410 event)", "reset", "compact + drop (410 on resume)",
                "cut mid-event", "list errors + drop", "malformed event", "stall", "reset all",
                "stall all")[i % 10]
        if what == "drop all":
            f.drop_watches()
        elif what == "cut mid-event":
            f.drop_on_next_event("pods")
        elif what == "stall":
            f.hang_watches(kind, new=True)
            STOP.wait(E.prof.stall_s)
            f.unhang()
        elif what == "reset":
            f.reset_watches(kind)
        elif what == "expire (410 event)":
            f.expire_watches(kind)
        elif what == "compact + drop (410 on resume)":
            f.compact()
            f.drop_watches(kind)
        elif what == "malformed event":
            f.malformed("pods")
        elif what == "list errors + drop":
            f.fail_next(2, code=self.rng.choice((500, 503, 429)), op="list")
            f.compact()
            f.drop_watches(kind)
        elif what == "stall all":
            f.hang_watches(None, new=True)
            STOP.wait(E.prof.stall_s)
            f.unhang()
        else:
            f.reset_watches(None)
        STATS.add("watch faults")
        STATS.add("watch fault: " + what)

    @guarded("cluster view")
    def run(self):
        i = 0
        while sleep_unless_stopped(E.prof.fault_every):
            self.step(i)
            i += 1
        self.fake.unhang()
        self.fake.clear_faults()


def build_cluster(fake):
    """4 GPU nodes of 8 GPUs (tainted), 2 CPU nodes, 14 GPU pods and some CPU pods, the classes
    the policy names, and one workload of each kind (the scale reviews act on "trainer")."""
    taint = [{"key": GPU, "value": "present", "effect": "NoSchedule"}]
    for i in range(4):
        fake.add("nodes", mk_node("gpu-%d" % i, gpus=8, taints=taint))
    for i in range(2):
        fake.add("nodes", mk_node("cpu-%d" % i, gpus=None, labels={
            "kubernetes.io/hostname": "cpu-%d" % i}))
    for i in range(14):
        fake.add("pods", mk_pod("base-%d" % i, node="gpu-%d" % (i % 4), priority=100000))
    for i in range(6):
        fake.add("pods", mk_pod("web-%d" % i, ns="web", node="cpu-%d" % (i % 2), gpus=0))
    fake.add("priorityclasses", mk_class("gpu-standard", 100000, "PreemptLowerPriority"))
    fake.add("priorityclasses", mk_class("batch-low", 1000, "Never"))
    fake.add("priorityclasses", mk_class("system-cluster-critical", 2000000000))
    fake.add("deployments", mk_workload("deployments", "trainer", replicas=2))
    fake.add("replicasets", mk_workload("replicasets", "trainer-7d4b9", replicas=2))
    fake.add("statefulsets", mk_workload("statefulsets", "etcd-gpu", replicas=1))
    fake.add("jobs", mk_workload("jobs", "finetune", replicas=1))


@guarded("cluster view")
def cluster_churn(fake):
    """Pods come and go on the GPU nodes (at most 8 at once), change phase, and the trainer
    Deployment's replicas move between 2 and 3: the view keeps a stable size."""
    rng = random.Random(5000)
    live = collections.deque()
    i = 0
    while sleep_unless_stopped(E.prof.cluster_every):
        i += 1
        r = rng.random()
        if r < 0.45 or not live:
            name = "churn-%d" % i
            fake.add("pods", mk_pod(name, node="gpu-%d" % rng.randrange(4), phase="Pending"))
            live.append(name)
            if len(live) > 8:
                fake.delete("pods", live.popleft(), "ml")
        elif r < 0.8:
            p = mk_pod(rng.choice(live), node="gpu-%d" % rng.randrange(4),
                       phase=rng.choice(("Running", "Running", "Succeeded")))
            fake.modify("pods", p)
        elif r < 0.9:
            fake.modify("deployments", mk_workload("deployments", "trainer",
                                                   replicas=rng.choice((2, 3))))
        else:
            fake.delete("pods", live.popleft(), "ml")
        STATS.add("cluster changes")


# ---------------------------------------------------------------------------------------------
# sampling


def read(path):
    with open(path, "rb") as f:
        return f.read()


def proc_sample(pid):
    """(VmRSS KiB, open descriptors, threads, RssAnon KiB, RssFile KiB) of pid."""
    v = {}
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            k, _, rest = line.partition(":")
            if k in ("VmRSS", "Threads", "RssAnon", "RssFile"):
                v[k] = int(rest.split()[0])
    return (v.get("VmRSS", 0), len(os.listdir("/proc/%d/fd" % pid)), v.get("Threads", 0),
            v.get("RssAnon", 0), v.get("RssFile", 0))


def fd_kinds(pid):
    """Open descriptors by what they are: socket, pipe, anon_inode:[eventfd], a path..."""
    out = collections.Counter()
    d = "/proc/%d/fd" % pid
    for n in os.listdir(d):
        try:
            target = os.readlink(os.path.join(d, n))
        except OSError:
            continue
        target = re.sub(r":\[\d+\]$", "", target)
        if target.startswith("/"):
            target = "file"
        out[target] += 1
    return dict(sorted(out.items()))


class Sampler:
    def __init__(self, srv):
        self.srv = srv
        self.pid = srv.proc.pid
        self.samples = []  # (t since load start,) + proc_sample()
        self.t_load = None
        self.dead = None
        self.max_gap = 0.0  # the longest time between samples: how long the client stalled

    @guarded("process")
    def run(self):
        last = time.monotonic()
        while not STOP.is_set():
            self.sample()
            STOP.wait(1.0)
            now = time.monotonic()
            self.max_gap = max(self.max_gap, now - last)
            last = now

    def sample(self):
        if self.srv.proc.poll() is not None:
            if self.dead is None:
                self.dead = "exited with %s at %.0f s" % (self.srv.proc.returncode,
                                                         time.monotonic() - T0[0])
            return None
        try:
            s = proc_sample(self.pid)
        except OSError as e:
            self.dead = "cannot read /proc/%d: %s" % (self.pid, e)
            return None
        self.samples.append((time.monotonic() - self.t_load,) + s)
        return s


# ---------------------------------------------------------------------------------------------
# the server


class Server(ServerProcess):
    NAME = "gpuadmit"

    def __init__(self, work, args, valgrind_log=None):
        self.log_path = os.path.join(work, "server.log")
        self.args = [BIN] + args
        if valgrind_log:
            self.args = ["valgrind", "--leak-check=full", "--show-leak-kinds=definite,indirect",
                         "--errors-for-leak-kinds=definite,indirect", "--error-exitcode=99",
                         "--num-callers=40", "--fair-sched=yes",
                         "--log-file=" + valgrind_log] + self.args


def metrics_values(text):
    """{(name, frozenset(labels)): value} from the exposition text."""
    out = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = re.match(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? ([^ ]+)$', line)
        if not m:
            continue
        labels = frozenset(re.findall(r'([a-zA-Z_]+)="((?:[^"\\]|\\.)*)"', m.group(3) or ""))
        out[(m.group(1), labels)] = float(m.group(4))
    return out


def metric_sum(values, name, **want):
    return sum(v for (n, labels), v in values.items()
               if n == name and all((k, w) in labels for k, w in want.items()))


def parse_valgrind(path):
    """(ok, summary lines) from memcheck's log."""
    try:
        text = read(path).decode("utf-8", "replace")
    except OSError as e:
        return False, ["no valgrind log: %s" % e]
    lines = [re.sub(r"^==\d+== *", "", l) for l in text.splitlines()]
    keep = [l for l in lines if re.search(r"ERROR SUMMARY|definitely lost|indirectly lost|"
                                          r"possibly lost|still reachable|suppressed:|"
                                          r"All heap blocks were freed|in use at exit|"
                                          r"total heap usage", l)]
    errors = re.findall(r"ERROR SUMMARY: ([\d,]+) errors", text)
    definite = re.findall(r"definitely lost: ([\d,]+) bytes", text)
    indirect = re.findall(r"indirectly lost: ([\d,]+) bytes", text)
    no_leaks = "All heap blocks were freed" in text

    def zero(found):
        return bool(found) and found[-1].replace(",", "") == "0"

    ok = zero(errors) and (no_leaks or (zero(definite) and zero(indirect)))
    return ok, keep


def wait_ready(srv, timeout):
    """GET /readyz until 200 (the cluster view's first sync)."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        try:
            last = get("/readyz", timeout=timeout)
            if last[0] == 200:
                return True
        except (OSError, ssl.SSLError, http.client.HTTPException) as e:
            last = repr(e)
        if srv.proc.poll() is not None:
            return False
        time.sleep(0.2)
    return False


def view_matches(fake, timeout):
    """Polls /debug/view until it equals the simulated cluster: no event lost to the faults."""
    deadline = time.monotonic() + timeout
    diff = "never read"
    while time.monotonic() < deadline:
        try:
            st, body = get("/debug/view")
            got = json.loads(body)
            want = expected_view(fake)
            diff = view_diff(normalise(got), want) if got.get("synced") else "not synced"
            if not diff:
                return None
        except Exception as e:
            diff = repr(e)
        time.sleep(0.5)
    return diff


# ---------------------------------------------------------------------------------------------


def median(xs):
    return statistics.median(xs) if xs else 0


def run(args):
    prof = Profile(args.valgrind)
    E.prof = prof
    seconds = args.seconds
    mode = "valgrind" if args.valgrind else "soak"
    crit = collections.OrderedDict()  # criterion -> (ok, detail)

    def say(text=""):
        sys.stdout.write(text + "\n")
        sys.stdout.flush()

    with tempfile.TemporaryDirectory(prefix="gpuadmit-soak-") as work:
        if args.keep:
            work = tempfile.mkdtemp(prefix="gpuadmit-soak-kept-")
            say("# work directory (kept): %s" % work)
        # the CA and first pair; renewals come from the same CA, so clients keep verifying
        staging = os.path.join(work, "pki")
        pki = CertPair(staging)
        E.ctx = pki.context()
        cert, key = CertChaos.setup(staging, os.path.join(work, "serving"))
        rules_dir = os.path.join(work, "rules")
        os.makedirs(rules_dir)
        shutil.copy(RULES, os.path.join(rules_dir, "default.yaml"))
        fake = FakeAPIServer(pki.crt, pki.key, token=TOKEN, bookmark_interval=1.0).start()
        build_cluster(fake)
        kcfg = fake.kubeconfig(os.path.join(work, "kubeconfig"), ca_file=pki.ca, token=TOKEN)
        vg_log = os.path.join(work, "valgrind.log") if args.valgrind else None
        srv = Server(work, ["serve", "--listen", "127.0.0.1:0", "--tls-cert", cert, "--tls-key",
                            key, "--rules", rules_dir, "--kubeconfig", kcfg, "--watch-timeout",
                            str(prof.watch_timeout), "--debug-endpoints", "--max-body-bytes",
                            str(prof.max_body), "--idle-timeout", str(prof.idle_timeout),
                            "--request-timeout", str(prof.request_timeout),
                            "--shutdown-grace", "10"], vg_log)
        E.cases = valid_cases()
        E.server = srv
        try:
            srv.launch(timeout=prof.serving_wait)
            E.port = srv.port
            pid = srv.proc.pid
            say("# %s: gpuadmit pid %d on port %d, %d s of load%s; %d valid review kinds"
                % (mode, pid, srv.port, seconds, " under valgrind" if args.valgrind else "",
                   len(E.cases)))
            if not wait_ready(srv, prof.serving_wait):
                raise RuntimeError("not ready (first sync of the cluster view); log:\n%s"
                                   % srv.log_tail())
            deadline = time.monotonic() + prof.serving_wait
            while fake.open_watches() < len(KINDS) and time.monotonic() < deadline:
                time.sleep(0.1)
            time.sleep(1.0)  # the readiness probe's connection is gone
            start_fds_kinds = fd_kinds(pid)
            rss0, fds0, thr0, anon0, file0 = proc_sample(pid)
            sampler = Sampler(srv)
            sampler.t_load = time.monotonic()
            T0[0] = sampler.t_load
            rules = RulesChaos(work, rules_dir, srv)
            certs = CertChaos(work, srv, staging, os.path.join(work, "serving"))
            watches = WatchChaos(fake)
            threads = [threading.Thread(target=sampler.run, name="sampler")]
            threads += [threading.Thread(target=keepalive_worker, args=(k,), name="ka%d" % k)
                        for k in range(prof.keepalive_workers)]
            threads += [threading.Thread(target=churn_worker, args=(k,), name="churn%d" % k)
                        for k in range(prof.churn_workers)]
            threads += [threading.Thread(target=fn, args=a, name=fn.__name__)
                        for fn, a in ((bad_worker, ()), (slow_spawner, ()), (scraper, ()),
                                      (cluster_churn, (fake,)))]
            threads += [threading.Thread(target=o.run, name=type(o).__name__)
                        for o in (rules, certs, watches)]
            for th in threads:
                th.daemon = True
                th.start()
            next_note = 60
            while time.monotonic() - sampler.t_load < seconds:
                time.sleep(1.0)
                el = time.monotonic() - sampler.t_load
                if el >= next_note:
                    s = sampler.samples[-1] if sampler.samples else (0,) * 6
                    say("# %4.0f s: %d valid answers, %d failed; RSS %d KiB (anon %d, file %d), "
                        "%d fds" % (el, STATS.get("valid pod") + STATS.get("valid workload"),
                                    sum(STATS.fail.values()), s[1], s[4], s[5], s[2]))
                    next_note += 60
                if sampler.dead:
                    break
            load_s = time.monotonic() - sampler.t_load
            STOP.set()
            for th in threads:
                th.join(prof.stall_s + prof.change_wait * 3 + 30)
            stuck = [th.name for th in threads if th.is_alive()]
            alive_same = srv.proc.poll() is None and sampler.dead is None
            # settle: timeouts run out, the faults are off, the watches come back
            time.sleep(prof.idle_timeout + prof.request_timeout + 2)
            deadline = time.monotonic() + prof.settle_max
            fds_end = None
            while alive_same and time.monotonic() < deadline:
                fds_end = proc_sample(pid)[1]
                if fds_end == fds0 and fake.open_watches() >= len(KINDS):
                    break
                time.sleep(1.0)
            end_fds_kinds = fd_kinds(pid) if alive_same else {}
            rss_end_idle = proc_sample(pid)[0] if alive_same else 0
            view_diff_text = view_matches(fake, prof.settle_max) if alive_same else "server gone"
            ready = alive_same and get("/readyz")[0] == 200
            metrics = metrics_values(get("/metrics")[1].decode()) if alive_same else {}
            rc = srv.stop(prof.stop_wait)
        except Exception as e:
            say("%s FAIL: %s: %s\n%s" % (mode, type(e).__name__, e, traceback.format_exc()))
            say("# server log tail:\n" + "\n".join("#   " + l for l in
                                                    srv.log_tail(30).splitlines()))
            return 1
        finally:
            STOP.set()
            srv.kill()
            fake.stop()
        log_text = srv.log_text()

        # ---- criteria
        samples = sampler.samples
        warm = min(0.2 * seconds, 60.0)
        after_warm = [s for s in samples if s[0] >= warm][:10]
        last = [s for s in samples if s[0] <= load_s][-10:]
        rss_warm, rss_end = median([s[1] for s in after_warm]), median([s[1] for s in last])
        split = "anon %d -> %d, file %d -> %d" % (
            median([s[4] for s in after_warm]), median([s[4] for s in last]),
            median([s[5] for s in after_warm]), median([s[5] for s in last]))
        growth = (rss_end - rss_warm) / rss_warm if rss_warm else float("inf")
        fds_peak = max([s[2] for s in samples] or [0])
        rss_peak = max([s[1] for s in samples] or [0])
        n = STATS.n
        valid = n["valid pod"] + n["valid workload"]
        crit["valid requests"] = (STATS.fail["valid requests"] == 0 and valid > 0,
                                  "%d answered correctly, %d failed" % (
                                      valid + n["metrics scrapes"], STATS.fail["valid requests"]))
        bad_total = n["expect 400"] + n["expect 413"] + n["expect 415"]
        crit["error answers"] = (STATS.fail["error answers"] == 0 and bad_total > 0,
                                 "%d refused requests, %d with an unexpected answer"
                                 % (bad_total, STATS.fail["error answers"]))
        slow_n = sum(n["slow: " + k] for k in SLOW_KINDS)
        crit["slow clients cut"] = (STATS.fail["slow clients cut"] == 0 and slow_n > 0,
                                    "%d slow clients, closed after %.1f-%.1f s (limit %.1f s)"
                                    % (slow_n, min(SLOW_TIMES or [0]), max(SLOW_TIMES or [0]),
                                       prof.idle_timeout + prof.request_timeout +
                                       prof.slow_slack))
        crit["rule changes"] = (STATS.fail["rule changes"] == 0 and n["rule reloads ok"] > 0 and
                                n["rule reloads refused"] > 0,
                                "%d reloaded, %d broken ones refused, %d missed"
                                % (n["rule reloads ok"], n["rule reloads refused"],
                                   STATS.fail["rule changes"]))
        cert_ok = n["cert reloads ok (swap)"] + n["cert reloads ok (two renames)"]
        crit["certificate changes"] = (STATS.fail["certificate changes"] == 0 and cert_ok > 0,
                                       "%d served (%d swaps, %d two-rename), %d broken refused, "
                                       "%d certificates seen by clients"
                                       % (cert_ok, n["cert reloads ok (swap)"],
                                          n["cert reloads ok (two renames)"],
                                          n["cert reloads refused"], len(CERT_DERS)))
        crit["process"] = (alive_same and not stuck and rc == 0 and STATS.fail["process"] == 0,
                           "pid %d %s; SIGTERM exit code %r%s" % (
                               pid, "alive throughout" if alive_same else
                               "DIED: %s" % sampler.dead, rc,
                               "; load threads stuck: %s" % stuck if stuck else ""))
        try:
            check_no_sanitizer_report(log_text)
            check_json_log(log_text)
            log_ok, log_detail = True, "%d lines, all JSON" % log_text.count("\n")
        except AssertionError as e:
            log_ok, log_detail = False, str(e)[:500]
        crit["log"] = (log_ok, log_detail)
        if not args.valgrind:
            crit["memory"] = (growth < RSS_GROWTH_MAX,
                              "RSS %d KiB at start, %d after the %.0f s warm-up, %d at the end "
                              "of the load (%+.2f %%, limit %+.0f %%), peak %d, %d idle after"
                              % (rss0, rss_warm, warm, rss_end, growth * 100,
                                 RSS_GROWTH_MAX * 100, rss_peak, rss_end_idle))
        crit["descriptors"] = (fds_end == fds0,
                               "%d at start, peak %d, %s at the end %s" % (
                                   fds0, fds_peak, fds_end,
                                   "" if fds_end == fds0 else
                                   "(start %s, end %s)" % (start_fds_kinds, end_fds_kinds)))
        crit["cluster view"] = (view_diff_text is None and ready and
                                STATS.fail["cluster view"] == 0,
                                "equals the simulated cluster after %d faults and %d changes; "
                                "ready" % (n["watch faults"], n["cluster changes"])
                                if view_diff_text is None and ready else
                                "ready=%s; %s %s" % (ready, view_diff_text,
                                                     STATS.examples.get("cluster view", "")))
        m_ok = metric_sum(metrics, "gpuadmit_admission_requests_total")
        m_err = metric_sum(metrics, "gpuadmit_admission_requests_total", outcome="error")
        m_codes = {c: metric_sum(metrics, "gpuadmit_http_errors_total", code=str(c))
                   for c in (400, 413, 415)}
        m_reload = (metric_sum(metrics, "gpuadmit_policy_reloads_total", result="success"),
                    metric_sum(metrics, "gpuadmit_policy_reloads_total", result="failure"))
        want_reload = (n["rule reloads ok"], n["rule reloads refused"])
        metrics_ok = (m_ok - m_err == valid and m_err == bad_total and
                      all(m_codes[c] == n["expect %d" % c] for c in m_codes) and
                      m_reload == want_reload)
        crit["metrics agree"] = (metrics_ok, "reviews answered %d (client %d), refused %d "
                                 "(client %d: 400 %d/%d, 413 %d/%d, 415 %d/%d), policy reloads "
                                 "%d/%d refused %d/%d (server/client)"
                                 % (m_ok - m_err, valid, m_err, bad_total, m_codes[400],
                                    n["expect 400"], m_codes[413], n["expect 413"],
                                    m_codes[415], n["expect 415"], m_reload[0], want_reload[0],
                                    m_reload[1], want_reload[1]))
        vg_lines = []
        if args.valgrind:
            vg_ok, vg_lines = parse_valgrind(vg_log)
            if not vg_ok:
                tail = read(vg_log).decode("utf-8", "replace")[-20000:] \
                    if os.path.exists(vg_log) else ""
                say("# valgrind log (last 20000 characters):")
                say("\n".join("#   " + l for l in tail.splitlines()))
            crit["valgrind"] = (vg_ok, "; ".join(vg_lines) or "no summary")
        relists = {k: metric_sum(metrics, "gpuadmit_cluster_relists_total", resource=k)
                   for k in KINDS}

        # ---- summary
        say("")
        say("== gpuadmit %s: %.0f s of load%s ==" % (mode, load_s,
                                                     " under valgrind" if args.valgrind else ""))
        say("requests by kind:")
        rows = [("valid pod reviews", n["valid pod"]),
                ("  of which on new connections", n["valid via churn"]),
                ("valid workload reviews (incl. scale)", n["valid workload"]),
                ("valid requests failed", n["valid pod failed"] + n["valid workload failed"]),
                ("metrics scrapes", n["metrics scrapes"])]
        rows += [(k, n[k]) for k in sorted(n) if k.startswith("malformed: ")]
        rows += [(k, n[k]) for k in sorted(n) if k.startswith("wrong type: ")]
        rows += [(k, n[k]) for k in sorted(n) if k.startswith("oversized: ")]
        rows += [("slow client: " + k, n["slow: " + k]) for k in SLOW_KINDS]
        rows += [("  no handshake: a TLS alert, then the close", n["slow: TLS alert"]),
                 ("  answered, then closed", n["slow: answered"])]
        rows += [("churn TLS handshakes", n["churn handshakes"]),
                 ("  resumed sessions", n["churn handshakes resumed"]),
                 ("  handshake only, no request", n["churn handshake-only"]),
                 ("keep-alive connections opened", n["keep-alive connections"]),
                 ("  closed idle under a stalled client (resent)",
                  n["keep-alive closed idle under a stalled client"]),
                 ("rule reloads ok", n["rule reloads ok"]),
                 ("rule reloads refused (broken file)", n["rule reloads refused"]),
                 ("cert reloads ok (Secret volume swap)", n["cert reloads ok (swap)"]),
                 ("cert reloads ok (two renames)", n["cert reloads ok (two renames)"]),
                 ("cert reloads refused (broken pair)", n["cert reloads refused"]),
                 ("watch faults injected", n["watch faults"])]
        rows += [("  " + k[len("watch fault: "):], n[k]) for k in sorted(n)
                 if k.startswith("watch fault: ")]
        rows += [("cluster changes (pods, deployment)", n["cluster changes"]),
                 ("relists seen by the server", int(sum(relists.values())))]
        for name, v in rows:
            say("  %-48s %d" % (name, v))
        if n["rule reloads ok"]:
            say("  mean rule reload seen after %.0f ms" % (n["rule reload seconds x1000"] /
                                                          (n["rule reloads ok"] +
                                                           n["rule reloads refused"])))
        say("server process: pid %d, threads %d at start; the client's longest stall (between "
            "1 s samples) %.1f s" % (pid, thr0, sampler.max_gap))
        for st in STALLS[:5]:
            say("# keep-alive request sent after %s" % st)
        if not args.valgrind:
            say("resident memory (KiB): start %d, after warm-up (%.0f s) %d, end of load %d, "
                "growth %+.2f %%, peak %d (after warm-up to end: %s; at start anon %d, file %d)"
                % (rss0, warm, rss_warm, rss_end, growth * 100, rss_peak, split, anon0, file0))
        else:
            say("resident memory (KiB, under valgrind, not judged): start %d, end %d, peak %d"
                % (rss0, rss_end, rss_peak))
        say("open descriptors: start %d, peak %d, end %s  (%s)" % (fds0, fds_peak, fds_end,
                                                                   start_fds_kinds))
        if vg_lines:
            say("valgrind:")
            for l in vg_lines:
                say("  " + l)
        say("criteria:")
        for name, (ok, detail) in crit.items():
            say("  %s  %-20s %s" % ("PASS" if ok else "FAIL", name, detail))
        for c, ex in STATS.examples.items():
            say("# first failures, %s (%d in all):" % (c, STATS.fail[c]))
            for e in ex:
                say("#   " + e.replace("\n", "\n#     "))
        if not all(ok for ok, _ in crit.values()):
            say("# server log tail:")
            say("\n".join("#   " + l for l in log_text.splitlines()[-30:]))
        verdict = all(ok for ok, _ in crit.values())
        say("%s %s" % (mode, "PASS" if verdict else "FAIL"))
        return 0 if verdict else 1


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--valgrind", action="store_true", help="run the server under memcheck")
    ap.add_argument("--seconds", type=int, default=None,
                    help="load duration (SOAK_SECONDS, default 600; with --valgrind "
                    "SOAK_VALGRIND_SECONDS, default 60)")
    ap.add_argument("--keep", action="store_true",
                    help="keep the work directory (server log, valgrind log) for inspection")
    args = ap.parse_args()
    if args.seconds is None:
        env = "SOAK_VALGRIND_SECONDS" if args.valgrind else "SOAK_SECONDS"
        args.seconds = int(os.environ.get(env, "60" if args.valgrind else "600"))
    if args.seconds < 10:
        ap.error("--seconds: at least 10")
    if not os.access(BIN, os.X_OK):
        sys.stderr.write("%s: not built (make)\n" % BIN)
        return 2
    if args.valgrind and shutil.which("valgrind") is None:
        sys.stderr.write("valgrind is not installed\n")
        return 2
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
