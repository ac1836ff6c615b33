#!/usr/bin/env python3
"""End-to-end tests for "gpuadmit serve": the real binary, real TLS, real HTTP.

    GPUADMIT_BIN=build/release/gpuadmit python3 tests/e2e/test_server.py
    GPUADMIT_SLOW=1 ...    slower binary (sanitizers): same assertions, longer time bounds

Python 3 standard library only. Every test starts its own server on 127.0.0.1:0 (the port is
read from the "serving" log line), talks to it over TLS verified against a CA made for this run
and the Service DNS name, and stops it in a finally block. Prints "ok - NAME" or
"not ok - NAME: REASON" per test and ends with "e2e: N passed, M failed".
"""
import base64
import http.client
import json
import os
import select
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import warnings

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import (CertPair, SLOW, SERVICE_DNS, Fail, ServerProcess, check, eq,  # noqa: E402
                    indent, kill_running, read_bytes, t, tls_connect)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.environ.get("GPUADMIT_BIN", "build/release/gpuadmit")
FIXTURE = os.path.join(ROOT, "tests", "data", "k8s", "admission-examples",
                       "kubewarden-pod-create-admissionreview.json")
SUITE_LIMIT_S = 120 if SLOW else 90  # last-resort watchdog; a normal run takes 10-20 s
JSON_CT = {"Content-Type": "application/json"}


# ---------------------------------------------------------------------------------------------
# certificates



def install_pair(cert_path, key_path, cert_pem, key_pem, between=None):
    """Replaces the serving files as a rotation would: temp names in the same directory, then
    rename, certificate first and key second (so the server may see a mismatch). between(),
    when given, runs after the certificate is in place and before the key is."""
    d = os.path.dirname(cert_path)
    tmps = []
    for data in (cert_pem, key_pem):
        fd, tmp = tempfile.mkstemp(dir=d, prefix=".rot.")
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        tmps.append(tmp)
    os.rename(tmps[0], cert_path)
    if between is not None:
        between()
    os.rename(tmps[1], key_path)


# ---------------------------------------------------------------------------------------------
# the server under test

class Server(ServerProcess):
    """One gpuadmit process. Use as a context manager: the process is always stopped on exit;
    on a clean exit of the block it must stop gracefully with code 0 and a clean log."""

    def __init__(self, workdir, cert, key, *extra, name="srv"):
        self.workdir = workdir
        self.log_path = os.path.join(workdir, "%s-%d.log" % (name, time.monotonic_ns()))
        self.rules = os.path.join(workdir, "rules")
        os.makedirs(self.rules, exist_ok=True)
        # these tests are about the server, not the policy: a policy with no rules allows all
        with open(os.path.join(self.rules, "empty.yaml"), "w") as f:
            f.write("apiVersion: gpuadmit.io/v1alpha1\nkind: GPUPolicy\n"
                    "metadata:\n  name: empty\nspec:\n  rules: []\n")
        self.args = [BIN, "serve", "--listen", "127.0.0.1:0", "--tls-cert", cert, "--tls-key",
                     key, "--rules", self.rules] + list(extra)
        if "--shutdown-grace" not in extra:
            self.args += ["--shutdown-grace", "5"]
        self.proc = None
        self.port = None
        self.rc = None

    def __enter__(self):
        return self.launch()

    def __exit__(self, exc_type, exc, tb):
        if exc_type is not None:
            self.stop(t(3))
            if not isinstance(exc, Fail) or "log:" not in str(exc):
                sys.stdout.write(indent("server log tail", self.log_tail()))
            return False
        rc = self.stop(t(12))
        self.check_clean_exit(rc)
        return False

    def signal(self, sig):
        self.proc.send_signal(sig)

    def check_exit_code(self, rc):
        want = getattr(self, "expect_rc", 0)
        check(rc == want, "server did not stop as expected on SIGTERM (exit code %r, want %r); "
              "log:\n%s" % (rc, want, self.log_tail()))


# ---------------------------------------------------------------------------------------------
# clients


class Conn(http.client.HTTPSConnection):
    """HTTPS to 127.0.0.1:PORT, verified against the context's CAs and the Service DNS name."""

    def __init__(self, port, ctx, timeout=None, hostname=SERVICE_DNS):
        super().__init__(hostname, port, context=ctx, timeout=timeout or t(10))
        self.tls_ctx = ctx
        self.tls_name = hostname
        self.connects = 0
        self.peer_der = None
        self.tls_version = None

    def connect(self):
        self.sock = tls_connect(self.port, self.tls_ctx, self.timeout, self.tls_name)
        self.connects += 1
        self.peer_der = self.sock.getpeercert(binary_form=True)
        self.tls_version = self.sock.version()


def tls_socket(port, ctx, timeout=None):
    return tls_connect(port, ctx, timeout or t(10))


def poll_tls(sock):
    """Without blocking: None when nothing (or only TLS housekeeping such as session tickets)
    has arrived, else the application bytes received (b"" when the peer closed)."""
    r, _, _ = select.select([sock], [], [], 0)
    if not r and not sock.pending():
        return None
    old = sock.gettimeout()
    sock.settimeout(0.0)
    try:
        return sock.recv(65536)
    except (ssl.SSLWantReadError, ssl.SSLWantWriteError, BlockingIOError):
        return None
    except (ConnectionError, ssl.SSLError):
        return b""
    finally:
        sock.settimeout(old)


class Reply:
    def __init__(self, resp, body):
        self.status = resp.status
        self.headers = resp.getheaders()
        self.body = body
        self.resp = resp

    def header(self, name):
        return self.resp.getheader(name)

    def json(self):
        try:
            return json.loads(self.body)
        except ValueError:
            raise Fail("body is not JSON: %r" % self.body[:300])

    def __repr__(self):
        return "HTTP %d %r %r" % (self.status, self.headers, self.body[:300])


def call(conn, method, path, body=None, headers=None):
    conn.request(method, path, body=body, headers=headers or {})
    resp = conn.getresponse()
    return Reply(resp, resp.read())


# ---------------------------------------------------------------------------------------------
# admission reviews


def gpu_pod(name="trainer-0", ns="ml-research"):
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": ns,
            "labels": {"app.kubernetes.io/name": "trainer", "team": "vision"},
            "annotations": {"example.com/owner": "ml-platform"},
        },
        "spec": {
            "restartPolicy": "Never",
            "schedulerName": "default-scheduler",
            "containers": [{
                "name": "trainer",
                "image": "nvcr.io/nvidia/pytorch:24.01-py3",
                "command": ["python", "-m", "torch.distributed.run", "train.py"],
                "resources": {
                    "limits": {"nvidia.com/gpu": "1", "cpu": "8", "memory": "32Gi"},
                    "requests": {"nvidia.com/gpu": "1", "cpu": "4", "memory": "16Gi"},
                },
                "volumeMounts": [{"name": "dshm", "mountPath": "/dev/shm"}],
            }, {
                "name": "metrics",
                "image": "nvcr.io/nvidia/k8s/dcgm-exporter:3.3.5-3.4.0-ubuntu22.04",
                "resources": {"limits": {"cpu": "100m", "memory": "128Mi"}},
            }],
            "volumes": [{"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": "8Gi"}}],
            "tolerations": [
                {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
                {"key": "node.kubernetes.io/not-ready", "operator": "Exists",
                 "effect": "NoExecute", "tolerationSeconds": 300},
            ],
            "nodeSelector": {"nvidia.com/gpu.present": "true",
                             "nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB"},
        },
    }


def review(uid, api="admission.k8s.io/v1", op="CREATE"):
    return {
        "apiVersion": api,
        "kind": "AdmissionReview",
        "request": {
            "uid": uid,
            "kind": {"group": "", "version": "v1", "kind": "Pod"},
            "resource": {"group": "", "version": "v1", "resource": "pods"},
            "requestKind": {"group": "", "version": "v1", "kind": "Pod"},
            "requestResource": {"group": "", "version": "v1", "resource": "pods"},
            "name": "trainer-0",
            "namespace": "ml-research",
            "operation": op,
            "userInfo": {
                "username": "system:serviceaccount:kube-system:job-controller",
                "uid": "4b1c7e2a-1f7e-4c1b-9a53-0b7a4c2f9e11",
                "groups": ["system:serviceaccounts", "system:serviceaccounts:kube-system",
                           "system:authenticated"],
            },
            "object": gpu_pod(),
            "oldObject": None,
            "dryRun": False,
            "options": {"apiVersion": "meta.k8s.io/v1", "kind": "CreateOptions"},
        },
    }


def body_of(obj, ascii_only=True):
    return json.dumps(obj, ensure_ascii=ascii_only).encode("utf-8")


UID_MARK = "@@UID@@"
TEMPLATE = body_of(review(UID_MARK)).decode()


def fast_body(uid):
    """A v1 GPU-pod review for a plain ASCII uid, without re-encoding the whole document."""
    return TEMPLATE.replace(UID_MARK, uid, 1).encode()


def check_review_reply(rep, uid, mutating, api="admission.k8s.io/v1"):
    """A correct, allowed admission answer for uid."""
    eq(rep.status, 200, "status (%r)" % (rep,))
    ct = rep.header("Content-Type") or ""
    eq(ct, "application/json", "Content-Type")
    doc = rep.json()
    eq(doc.get("apiVersion"), api, "apiVersion")
    eq(doc.get("kind"), "AdmissionReview", "kind")
    resp = doc.get("response")
    check(isinstance(resp, dict), "no response object in %r" % doc)
    eq(resp.get("uid"), uid, "response.uid")
    check("allowed" in resp, "response.allowed is not present: %r" % resp)
    check(resp["allowed"] is True, "response.allowed is %r, expected true" % resp["allowed"])
    if not mutating:
        check("patch" not in resp and "patchType" not in resp,
              "validating response carries a patch: %r" % resp)
    else:
        check(("patch" in resp) == ("patchType" in resp),
              "patch and patchType must travel together: %r" % resp)
        if "patch" in resp:
            eq(resp["patchType"], "JSONPatch", "patchType")
            ops = json.loads(base64.b64decode(resp["patch"], validate=True))
            check(isinstance(ops, list) and ops, "patch is not a non-empty JSON Patch: %r" % ops)
    return doc


def check_status_reply(rep, code, reason, message_part):
    """A metav1.Status error answer."""
    eq(rep.status, code, "status (%r)" % (rep,))
    ct = rep.header("Content-Type") or ""
    eq(ct, "application/json", "Content-Type of %d" % code)
    doc = rep.json()
    eq(doc.get("kind"), "Status", "kind")
    eq(doc.get("apiVersion"), "v1", "apiVersion")
    eq(doc.get("status"), "Failure", "status field")
    eq(doc.get("code"), code, "code field")
    eq(doc.get("reason"), reason, "reason field")
    msg = doc.get("message")
    check(isinstance(msg, str) and message_part in msg,
          "message %r does not contain %r" % (msg, message_part))
    return doc


def still_serving(srv, ctx, tag="after"):
    """A fresh connection still gets a correct answer."""
    c = Conn(srv.port, ctx)
    try:
        uid = "still-serving-%s-%d" % (tag, time.monotonic_ns())
        check_review_reply(call(c, "POST", "/validate", fast_body(uid), JSON_CT), uid, False)
    finally:
        c.close()


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
def tls_chain_and_name_verified():
    with Server(E.work, E.a.crt, E.a.key, name="tls") as srv:
        c = Conn(srv.port, E.a.context())
        try:
            rep = call(c, "GET", "/healthz")
            eq(rep.status, 200, "healthz status")
            eq(c.peer_der, E.a.der, "served certificate (DER)")
            check(c.tls_version in ("TLSv1.2", "TLSv1.3"), "TLS version %r" % c.tls_version)
        finally:
            c.close()
        # a client that trusts a different CA refuses the server
        c = Conn(srv.port, E.b.context())
        try:
            try:
                call(c, "GET", "/healthz")
                raise Fail("a client trusting another CA completed the handshake")
            except ssl.SSLCertVerificationError as e:
                check(e.verify_code != 0, "verification error without a code: %r" % e)
        finally:
            c.close()
        # the right CA but the wrong name is refused too
        c = Conn(srv.port, E.a.context(), hostname="other.gpuadmit-system.svc")
        try:
            try:
                call(c, "GET", "/healthz")
                raise Fail("a client expecting another host name completed the handshake")
            except ssl.SSLCertVerificationError:
                pass
        finally:
            c.close()
        # a client that offers only TLS 1.1 or older is refused
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            ctx = E.a.context()
            ctx.set_ciphers("ALL:@SECLEVEL=0")
            ctx.minimum_version = ssl.TLSVersion.MINIMUM_SUPPORTED
            ctx.maximum_version = ssl.TLSVersion.TLSv1_1
        try:
            s = tls_socket(srv.port, ctx, timeout=t(5))
            version = s.version()
            s.close()
            raise Fail("a %s handshake succeeded" % version)
        except (ssl.SSLError, ConnectionError):
            pass
        still_serving(srv, E.a.context())


@test
def happy_path_mutate_and_validate():
    with Server(E.work, E.a.crt, E.a.key, name="happy") as srv:
        c = Conn(srv.port, E.a.context())
        try:
            for path, mutating in (("/mutate", True), ("/validate", False)):
                uid = "705ab4f5-6393-11e8-b7cc-42010a800002" if mutating else \
                    "0df28fbd-5f5f-11e8-bc74-36e6bb280816"
                rep = call(c, "POST", path, body_of(review(uid)), JSON_CT)
                check_review_reply(rep, uid, mutating)
                check(rep.header("Connection") is None or
                      rep.header("Connection").lower() != "close",
                      "%s answer closes the connection: %r" % (path, rep.headers))
            # also with a charset parameter, as some clients send it
            uid = "c1a2b3c4-0000-4000-8000-000000000001"
            rep = call(c, "POST", "/validate", body_of(review(uid)),
                       {"Content-Type": "application/json; charset=utf-8"})
            check_review_reply(rep, uid, False)
            eq(c.connects, 1, "connections used for 3 keep-alive requests")
        finally:
            c.close()


@test
def large_request_headers():
    """libmicrohttpd keeps a connection's headers in its per-connection pool
    (CONNECTION_MEMORY_BYTES, which it zeroes for every request): headers far past what the
    apiserver sends (a bearer token, tracing, a proxy's additions: about 8 KiB) are served, and
    on the same connection the next request is too; headers past the pool get 431 or a closed
    connection (libmicrohttpd closes while the client may still be writing), and the server
    serves on."""
    with Server(E.work, E.a.crt, E.a.key, name="headers") as srv:
        c = Conn(srv.port, E.a.context())
        try:
            big = dict(JSON_CT)
            big["Authorization"] = "Bearer " + "t" * 4096
            for k in range(8):
                big["X-Trace-%d" % k] = "%d" % k * 512
            uid = "big-headers-1"
            check_review_reply(call(c, "POST", "/validate", fast_body(uid), big), uid, False)
            uid = "big-headers-2"
            check_review_reply(call(c, "POST", "/validate", fast_body(uid), JSON_CT), uid, False)
            eq(c.connects, 1, "connections used")
        finally:
            c.close()
        c = Conn(srv.port, E.a.context())
        try:
            huge = dict(JSON_CT)
            for k in range(40):
                huge["X-Pad-%d" % k] = "p" * 1024
            try:
                rep = call(c, "POST", "/validate", fast_body("huge-headers"), huge)
            except (ssl.SSLError, ConnectionError, http.client.HTTPException):
                rep = None  # closed while the client still wrote: refused unserved
            if rep is not None:
                eq(rep.status, 431, "status for 40 KiB of headers")
        finally:
            c.close()
        still_serving(srv, E.a.context(), "huge-headers")


@test
def captured_kubewarden_fixture():
    raw = read_bytes(FIXTURE)
    uid = json.loads(raw)["request"]["uid"]
    eq(uid, "1299d386-525b-4032-98ae-1949f69f9cfc", "fixture uid")
    with Server(E.work, E.a.crt, E.a.key, name="fixture") as srv:
        c = Conn(srv.port, E.a.context())
        try:
            check_review_reply(call(c, "POST", "/validate", raw, JSON_CT), uid, False)
            check_review_reply(call(c, "POST", "/mutate", raw, JSON_CT), uid, True)
        finally:
            c.close()


@test
def unusual_uids_echoed():
    uids = [
        "ünïcödé-ガード-\u0434\u0430-\U0001F680-\u00e9",  # non-BMP too
        "x" * 200,
        ("0123456789abcdef" * 13)[:200],
        "quote\"back\\slash/solidus\ttab",
        "a",
        "\u2028line-sep\u2029para-sep",
    ]
    with Server(E.work, E.a.crt, E.a.key, name="uids") as srv:
        c = Conn(srv.port, E.a.context())
        try:
            for i, uid in enumerate(uids):
                for ascii_only in (True, False):  # \u escapes and raw UTF-8 on the wire
                    path = "/mutate" if i % 2 else "/validate"
                    rep = call(c, "POST", path, body_of(review(uid), ascii_only), JSON_CT)
                    check_review_reply(rep, uid, path == "/mutate")
                    if not ascii_only and "\\" not in uid and '"' not in uid and \
                            "\u2028" not in uid:
                        # byte for byte: the UTF-8 of the uid appears verbatim in the answer
                        check(('"uid":"%s"' % uid).encode() in rep.body,
                              "uid bytes not echoed verbatim: %r" % rep.body[:300])
        finally:
            c.close()


@test
def v1beta1_gets_v1beta1():
    api = "admission.k8s.io/v1beta1"
    with Server(E.work, E.a.crt, E.a.key, name="v1beta1") as srv:
        c = Conn(srv.port, E.a.context())
        try:
            for path in ("/validate", "/mutate"):
                uid = "beta-%s-6c2f1d7e-91aa-4c6e-8a51-5b9e0d3c7a42" % path[1:]
                rep = call(c, "POST", path, body_of(review(uid, api=api)), JSON_CT)
                check_review_reply(rep, uid, path == "/mutate", api=api)
        finally:
            c.close()


def bad_request_case(name, method, path, body, headers, code, reason, part, extra=None):
    def fn():
        with Server(E.work, E.a.crt, E.a.key, name="bad") as srv:
            ctx = E.a.context()
            c = Conn(srv.port, ctx)
            try:
                rep = call(c, method, path, body, headers)
                check_status_reply(rep, code, reason, part)
                if extra:
                    extra(rep)
                # the error does not cost the connection: the next review goes over it
                check(rep.header("Connection") != "close",
                      "error answer closes the connection: %r" % rep)
                again = call(c, "POST", "/validate", fast_body("after-" + name), JSON_CT)
                check_review_reply(again, "after-" + name, False)
                eq(c.connects, 1, "TLS connections used for the error and the next review")
            finally:
                c.close()
            ev = srv.wait_log("request refused", timeout=t(2))
            check(ev is not None and ev.get("status") == code,
                  "no \"request refused\" log line with status %d: %s" % (code, srv.log_tail()))
            still_serving(srv, ctx, name)
    fn.__name__ = "bad_input_" + name
    return test(fn)


def _allow_post(rep):
    eq(rep.header("Allow"), "POST", "Allow header of 405")


bad_request_case("malformed_json", "POST", "/validate",
                 b'{"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {',
                 JSON_CT, 400, "BadRequest", "invalid JSON")
bad_request_case("wrong_api_version", "POST", "/mutate",
                 body_of(review("uid-v2", api="admission.k8s.io/v2")),
                 JSON_CT, 400, "BadRequest", "apiVersion")
_no_uid = review("x")
del _no_uid["request"]["uid"]
bad_request_case("missing_uid", "POST", "/validate", body_of(_no_uid), JSON_CT,
                 400, "BadRequest", "request.uid: missing")
_no_req = review("x")
del _no_req["request"]
bad_request_case("missing_request", "POST", "/mutate", body_of(_no_req), JSON_CT,
                 400, "BadRequest", "review.request: missing")
bad_request_case("content_type_text_plain", "POST", "/validate", fast_body("ct-text"),
                 {"Content-Type": "text/plain"}, 415, "UnsupportedMediaType",
                 "Content-Type must be application/json")
bad_request_case("content_type_missing", "POST", "/mutate", fast_body("ct-none"), {},
                 415, "UnsupportedMediaType", "Content-Type must be application/json")
bad_request_case("get_mutate_405", "GET", "/mutate", None, {}, 405, "MethodNotAllowed",
                 "not allowed", _allow_post)
bad_request_case("unknown_path_404", "POST", "/nope", fast_body("nope"), JSON_CT,
                 404, "NotFound", "no such path")


@test
def health_endpoints():
    with Server(E.work, E.a.crt, E.a.key, name="health") as srv:
        c = Conn(srv.port, E.a.context())
        try:
            rep = call(c, "GET", "/healthz")
            eq(rep.status, 200, "healthz status")
            eq(rep.body, b"ok\n", "healthz body")
            rep = call(c, "GET", "/readyz")
            eq(rep.status, 200, "readyz status")
            eq(rep.body, b"ok\n", "readyz body")
            rep = call(c, "HEAD", "/healthz")
            eq(rep.status, 200, "HEAD /healthz status")
            eq(rep.body, b"", "HEAD /healthz body")
            # probes keep their connection alive: one TLS handshake for all three
            eq(c.connects, 1, "TLS connections used by three probes")
        finally:
            c.close()


def metrics_value(srv, ctx, name, absent=None):
    """The value of the series name (with its labels) in /metrics; absent when given and the
    series is not there (series that only appear once nonzero)."""
    c = Conn(srv.port, ctx)
    try:
        rep = call(c, "GET", "/metrics")
    finally:
        c.close()
    eq(rep.status, 200, "/metrics")
    for line in rep.body.decode().splitlines():
        if line.startswith(name + " "):
            return float(line.split()[-1])
    if absent is not None:
        return absent
    raise Fail("no %s in /metrics" % name)


@test
def overloaded_connections_shed_unserved():
    """A connection whose ClientHello waited past --max-queue-ms (here: in the listen backlog
    while the process is stopped) is closed before any TLS work; one that did not is served."""
    ctx = E.a.context()
    with Server(E.work, E.a.crt, E.a.key, "--max-queue-ms", "200", name="shed") as srv:
        results = {}

        def client(tag):
            try:
                s = tls_socket(srv.port, ctx, timeout=t(10))
                try:
                    s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
                    results[tag] = s.recv(64)
                finally:
                    s.close()
            except (ssl.SSLError, OSError) as e:
                results[tag] = e
            results[tag + "-at"] = time.monotonic()

        since = srv.log_size()
        srv.signal(signal.SIGSTOP)
        try:
            waiting = threading.Thread(target=client, args=("waited",))
            waiting.start()
            time.sleep(0.6)  # its ClientHello sits in the kernel for 600 ms > 200 ms
        finally:
            srv.signal(signal.SIGCONT)
        resumed = time.monotonic()
        waiting.join(t(10))
        check(not waiting.is_alive(), "the shed client was left hanging")
        got = results.get("waited")
        check(isinstance(got, (ssl.SSLError, OSError)),
              "a connection that waited 600 ms was served: %r" % (got,))
        check(results["waited-at"] - resumed < t(2),
              "the shed client learned it %.2f s after the server resumed"
              % (results["waited-at"] - resumed))
        # accepted first, then its ClientHello waits behind a stopped worker
        raw = socket.create_connection(("127.0.0.1", srv.port), timeout=t(10))
        try:
            time.sleep(0.3)  # accepted meanwhile
            srv.signal(signal.SIGSTOP)
            try:
                late = {}

                def hello():
                    try:
                        tls = ctx.wrap_socket(raw, server_hostname=SERVICE_DNS)
                        tls.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
                        late["got"] = tls.recv(64)
                    except (ssl.SSLError, OSError) as e:
                        late["got"] = e
                hs = threading.Thread(target=hello)
                hs.start()
                time.sleep(0.6)
            finally:
                srv.signal(signal.SIGCONT)
            hs.join(t(10))
            check(not hs.is_alive(), "the client shed in its handshake was left hanging")
            check(isinstance(late.get("got"), (ssl.SSLError, OSError)),
                  "a ClientHello that waited 600 ms was served: %r" % (late.get("got"),))
        finally:
            raw.close()
        client("fresh")
        check(isinstance(results.get("fresh"), bytes) and
              results["fresh"].startswith(b"HTTP/1.1 200"),
              "a connection after the overload was not served: %r" % (results.get("fresh"),))
        eq(metrics_value(srv, ctx, "gpuadmit_connections_shed_total"), 2.0,
           "connections shed (one unaccepted in the backlog, one accepted)")
        for phase in ("before_client_hello", "after_client_hello"):
            eq(metrics_value(srv, ctx, 'gpuadmit_tls_handshake_failures_total{phase="%s"}'
                             % phase), 0.0, "shedding counted as a TLS failure (%s)" % phase)
        time.sleep(1.2)  # the summary comes once a second
        evs = [e for e in srv.events(since)
               if e.get("msg") == "overloaded: connections closed unserved"]
        check(sum(e.get("connections", 0) for e in evs) == 2 and
              all(e.get("max_queue_ms") == 200 for e in evs), "summary log lines: %r" % (evs,))
        noise = [e for e in srv.events(since) if e.get("msg") == "libmicrohttpd"]
        eq(noise, [], "libmicrohttpd lines for the shed connection")


@test
def body_over_limit_content_length_413():
    size = 10 * 1024 * 1024
    with Server(E.work, E.a.crt, E.a.key, name="413cl") as srv:
        ctx = E.a.context()
        s = tls_socket(srv.port, ctx)
        rep = None
        got = b""
        note = ""
        sent = 0
        try:
            head = ("POST /validate HTTP/1.1\r\nHost: %s:%d\r\nContent-Type: application/json\r\n"
                    "Content-Length: %d\r\n\r\n" % (SERVICE_DNS, srv.port, size)).encode()
            s.sendall(head)
            chunk = b" " * 65536
            try:
                while sent < size:
                    data = poll_tls(s)
                    if data is not None:
                        got = data
                        break
                    s.sendall(chunk)
                    sent += len(chunk)
            except (ConnectionError, ssl.SSLError, socket.timeout) as e:
                note = "send stopped after %d body bytes: %r" % (sent, e)
            # read the answer (after the early bytes, if any)
            try:
                s.settimeout(t(10))
                buf = got
                while b"\r\n\r\n" not in buf or not _complete(buf):
                    more = s.recv(65536)
                    if not more:
                        break
                    buf += more
                rep = _parse_raw(buf)
            except (ConnectionError, ssl.SSLError, socket.timeout, ValueError) as e:
                note += "; response unreadable: %r" % e
        finally:
            s.close()
        sys.stdout.write("# 413 (announced %d bytes): %d body bytes sent before the answer%s\n"
                         % (size, sent, "; " + note if note else ""))
        if rep is not None:
            check_status_reply(rep, 413, "RequestEntityTooLarge", "over the limit")
            check("%d bytes" % size in rep.json()["message"],
                  "413 message does not name the announced size: %r" % rep.json()["message"])
        else:
            # the reset destroyed the answer in flight: the server's log must show the 413
            sys.stdout.write("# note: %s; checking the log instead\n" % note)
        ev = srv.wait_log("request refused", timeout=t(3))
        check(ev is not None and ev.get("status") == 413,
              "no \"request refused\" log line with status 413: %s" % srv.log_tail())
        still_serving(srv, ctx, "413cl")


def _complete(buf):
    head, _, rest = buf.partition(b"\r\n\r\n")
    for line in head.split(b"\r\n")[1:]:
        k, _, v = line.partition(b":")
        if k.strip().lower() == b"content-length":
            return len(rest) >= int(v.strip())
    return False


class _FakeResp:
    def __init__(self, status, headers):
        self.status = status
        self._h = headers

    def getheaders(self):
        return list(self._h)

    def getheader(self, name, default=None):
        for k, v in self._h:
            if k.lower() == name.lower():
                return v
        return default


def _parse_raw(buf):
    head, sep, rest = buf.partition(b"\r\n\r\n")
    if not sep:
        raise ValueError("incomplete response head: %r" % buf[:200])
    lines = head.decode("latin-1").split("\r\n")
    parts = lines[0].split(" ", 2)
    if len(parts) < 2 or not parts[0].startswith("HTTP/1."):
        raise ValueError("bad status line %r" % lines[0])
    headers = []
    for line in lines[1:]:
        k, _, v = line.partition(":")
        headers.append((k.strip(), v.strip()))
    fake = _FakeResp(int(parts[1]), headers)
    n = int(fake.getheader("Content-Length", len(rest)))
    if len(rest) < n:
        raise ValueError("truncated body: %d of %d bytes" % (len(rest), n))
    return Reply(fake, rest[:n])


@test
def body_over_limit_chunked_413():
    limit = 65536
    with Server(E.work, E.a.crt, E.a.key, "--max-body-bytes", str(limit), name="413chunk") as srv:
        ctx = E.a.context()
        c = Conn(srv.port, ctx)
        try:
            total = 100 * 1024
            piece = b"[" + b"1," * 8191 + b"1]"  # 16 KiB of valid JSON text, sent repeatedly

            def chunks():
                n = 0
                while n < total:
                    p = piece[:min(len(piece), total - n)]
                    n += len(p)
                    yield p

            c.putrequest("POST", "/validate")
            c.putheader("Content-Type", "application/json")
            c.putheader("Transfer-Encoding", "chunked")
            c.endheaders(message_body=chunks(), encode_chunked=True)
            resp = c.getresponse()
            rep = Reply(resp, resp.read())
            check_status_reply(rep, 413, "RequestEntityTooLarge", "over the limit of %d" % limit)
            # under the limit, a chunked body is fine
            uid = "chunked-small"
            c2 = Conn(srv.port, ctx)
            try:
                body = fast_body(uid)
                c2.putrequest("POST", "/mutate")
                c2.putheader("Content-Type", "application/json")
                c2.putheader("Transfer-Encoding", "chunked")
                c2.endheaders(message_body=iter([body[:100], body[100:]]), encode_chunked=True)
                r2 = c2.getresponse()
                check_review_reply(Reply(r2, r2.read()), uid, True)
            finally:
                c2.close()
        finally:
            c.close()
        ev = srv.wait_log("request refused", timeout=t(2))
        check(ev is not None and ev.get("status") == 413,
              "no \"request refused\" log line with status 413: %s" % srv.log_tail())
        still_serving(srv, ctx, "413chunk")


@test
def slow_client_is_timed_out():
    idle = 2
    with Server(E.work, E.a.crt, E.a.key, "--idle-timeout", str(idle), "--threads", "1",
                name="slow") as srv:
        ctx = E.a.context()
        stalled = tls_socket(srv.port, ctx)
        bare = socket.create_connection(("127.0.0.1", srv.port), timeout=t(10))  # no handshake
        half_body = tls_socket(srv.port, ctx)
        try:
            stalled.sendall(("POST /validate HTTP/1.1\r\nHost: %s:%d\r\nContent-Ty"
                             % (SERVICE_DNS, srv.port)).encode())
            body = fast_body("stalled-body")
            half_body.sendall(("POST /validate HTTP/1.1\r\nHost: %s:%d\r\n"
                               "Content-Type: application/json\r\nContent-Length: %d\r\n\r\n"
                               % (SERVICE_DNS, srv.port, len(body))).encode() + body[:100])
            t0 = time.monotonic()
            # while the stalled connections are open, others are served, and promptly
            c = Conn(srv.port, ctx)
            try:
                for i in range(20):
                    uid = "beside-stalled-%d" % i
                    s0 = time.monotonic()
                    rep = call(c, "POST", "/validate" if i % 2 else "/mutate", fast_body(uid),
                               JSON_CT)
                    check_review_reply(rep, uid, i % 2 == 0)
                    check(time.monotonic() - s0 < t(1),
                          "request %d took %.2f s beside a stalled connection"
                          % (i, time.monotonic() - s0))
            finally:
                c.close()
            still_serving(srv, ctx, "beside-stalled-new-conn")
            # ... and the stalled ones really were open (and unanswered) all that time
            check(time.monotonic() - t0 < idle,
                  "serving beside the stalled connection took past the idle timeout")
            eq(poll_tls(stalled), None, "stalled TLS connection state while others were served")
            eq(poll_tls(half_body), None, "stalled body connection state while others were served")
            # the stalled connections are closed by the server
            limit = idle + t(4)
            for name, sock in (("stalled TLS request head", stalled),
                               ("stalled TLS request body", half_body),
                               ("bare TCP, no handshake", bare)):
                sock.settimeout(max(0.1, t0 + limit - time.monotonic()))
                data = b""
                closed = False
                try:
                    while True:
                        more = sock.recv(65536)
                        if not more:
                            closed = True
                            break
                        data += more
                except (ConnectionError, ssl.SSLError):
                    closed = True
                except socket.timeout:
                    pass
                waited = time.monotonic() - t0
                check(closed, "%s still open %.1f s after it stalled (idle timeout %d s)"
                      % (name, waited, idle))
                check(waited < limit, "%s closed only after %.1f s" % (name, waited))
        finally:
            stalled.close()
            bare.close()
            half_body.close()
        still_serving(srv, ctx, "after-stall")


@test
def keepalive_10000_requests_8_connections():
    nthreads, per = 8, 1250
    with Server(E.work, E.a.crt, E.a.key, name="keepalive") as srv:
        ctx = E.a.context()
        results = [None] * nthreads
        conns = [Conn(srv.port, ctx) for _ in range(nthreads)]

        def worker(k):
            c = conns[k]
            ok = 0
            first_err = None
            first_sock = None
            same_sock = True
            try:
                for i in range(per):
                    uid = "ka-%d-%04d-%08x" % (k, i, (k * 7919 + i * 104729) & 0xffffffff)
                    mutating = i % 2 == 1
                    try:
                        rep = call(c, "POST", "/mutate" if mutating else "/validate",
                                   fast_body(uid), JSON_CT)
                        if first_sock is None:
                            first_sock = c.sock
                        elif c.sock is not first_sock:
                            same_sock = False
                        check_review_reply(rep, uid, mutating)
                        ok += 1
                    except Exception as e:
                        if first_err is None:
                            first_err = "request %d (%s): %r" % (i, uid, e)
            finally:
                results[k] = (ok, first_err, c.connects, same_sock)
                c.close()

        threads = [threading.Thread(target=worker, args=(k,), daemon=True)
                   for k in range(nthreads)]
        t0 = time.monotonic()
        for th in threads:
            th.start()
        for th in threads:
            th.join(timeout=max(1.0, t0 + t(60) - time.monotonic()))
        elapsed = time.monotonic() - t0
        check(all(not th.is_alive() for th in threads),
              "workers still running after %.0f s" % elapsed)
        sys.stdout.write("# 10000 keep-alive requests in %.1f s (%.0f/s)\n"
                         % (elapsed, nthreads * per / elapsed))
        total = sum(r[0] for r in results)
        errs = [r[1] for r in results if r[1]]
        check(total == nthreads * per, "%d of %d requests answered correctly; first error: %s"
              % (total, nthreads * per, errs[0] if errs else "?"))
        for k, (_, _, connects, same) in enumerate(results):
            eq(connects, 1, "TCP connections used by thread %d" % k)
            check(same, "thread %d's socket changed" % k)


@test
def certificate_rotation_under_load():
    d = os.path.join(E.work, "rotate")
    os.makedirs(d, exist_ok=True)
    cert, key = os.path.join(d, "tls.crt"), os.path.join(d, "tls.key")
    install_pair(cert, key, read_bytes(E.a.crt), read_bytes(E.a.key))
    with Server(E.work, cert, key, name="rotate") as srv:
        ctx = E.a.context(E.b)  # new connections must trust both CAs
        stop = threading.Event()
        lock = threading.Lock()
        stats = {"ok": 0, "fail": 0, "errors": [], "ders": set(), "ka_connects": []}

        def record_fail(msg):
            with lock:
                stats["fail"] += 1
                if len(stats["errors"]) < 5:
                    stats["errors"].append(msg)

        def keepalive(k):
            c = Conn(srv.port, ctx)
            i = 0
            try:
                while not stop.is_set():
                    uid = "rot-ka-%d-%d" % (k, i)
                    try:
                        check_review_reply(call(c, "POST", "/validate" if i % 2 else "/mutate",
                                                fast_body(uid), JSON_CT), uid, i % 2 == 0)
                        with lock:
                            stats["ok"] += 1
                    except Exception as e:
                        record_fail("keep-alive %d request %d: %r" % (k, i, e))
                    i += 1
            finally:
                with lock:
                    stats["ka_connects"].append(c.connects)
                c.close()

        def fresh(k):
            i = 0
            while not stop.is_set():
                uid = "rot-new-%d-%d" % (k, i)
                c = Conn(srv.port, ctx)
                try:
                    check_review_reply(call(c, "POST", "/validate", fast_body(uid), JSON_CT),
                                       uid, False)
                    with lock:
                        stats["ok"] += 1
                        stats["ders"].add(c.peer_der)
                except Exception as e:
                    record_fail("new-connection %d request %d: %r" % (k, i, e))
                finally:
                    c.close()
                i += 1

        threads = [threading.Thread(target=keepalive, args=(k,), daemon=True) for k in range(4)]
        threads += [threading.Thread(target=fresh, args=(k,), daemon=True) for k in range(2)]
        try:
            for th in threads:
                th.start()
            time.sleep(0.5)
            since = srv.log_size()
            window = {}

            def mismatch_window():
                # the new certificate with the old key: at least one poll sees the mismatch,
                # refuses it, and new connections keep getting the old certificate
                window["refused"] = srv.wait_log("new serving certificate refused", since,
                                                 timeout=t(1.6))
                c = Conn(srv.port, ctx)
                try:
                    c.connect()
                    window["der"] = c.peer_der
                finally:
                    c.close()

            install_pair(cert, key, read_bytes(E.b.crt), read_bytes(E.b.key), mismatch_window)
            t0 = time.monotonic()
            seen_new = False
            while time.monotonic() - t0 < t(5) and not seen_new:
                c = Conn(srv.port, ctx)
                try:
                    c.connect()
                    seen_new = c.peer_der == E.b.der
                finally:
                    c.close()
                if not seen_new:
                    time.sleep(0.05)
            took = time.monotonic() - t0
            check(seen_new, "new connections still get the old certificate %.1f s after the "
                  "files were replaced; log:\n%s" % (took, srv.log_tail()))
            time.sleep(1.0)
        finally:
            stop.set()
            for th in threads:
                th.join(timeout=t(15))
        check(all(not th.is_alive() for th in threads), "load threads did not stop")
        sys.stdout.write("# rotation seen after %.2f s; %d requests during the test\n"
                         % (took, stats["ok"]))
        check(stats["fail"] == 0, "%d failed requests during rotation: %s"
              % (stats["fail"], stats["errors"]))
        check(E.a.der in stats["ders"], "no new connection saw the old certificate")
        check(E.b.der in stats["ders"], "no new connection saw the new certificate")
        check(stats["ders"] <= {E.a.der, E.b.der}, "a connection saw an unknown certificate")
        check(stats["ok"] > 20, "too few requests during rotation: %d" % stats["ok"])
        eq(sorted(stats["ka_connects"]), [1, 1, 1, 1], "keep-alive connections per thread")
        check(srv.wait_log("serving certificate reloaded", since, timeout=t(1)) is not None,
              "no \"serving certificate reloaded\" log line")
        check(window.get("refused") is not None, "the transient mismatch (new certificate, old "
              "key) was not refused in the log; log:\n%s" % srv.log_tail())
        eq(window.get("der"), E.a.der, "certificate served while the key did not match")


@test
def broken_certificate_pair_refused():
    d = os.path.join(E.work, "broken")
    os.makedirs(d, exist_ok=True)
    cert, key = os.path.join(d, "tls.crt"), os.path.join(d, "tls.key")
    install_pair(cert, key, read_bytes(E.b.crt), read_bytes(E.b.key))
    with Server(E.work, cert, key, name="broken") as srv:
        ctx = E.b.context(E.c)
        c = Conn(srv.port, ctx)
        try:
            check_review_reply(call(c, "POST", "/validate", fast_body("before-broken"), JSON_CT),
                               "before-broken", False)
            eq(c.peer_der, E.b.der, "certificate before the broken pair")
            since = srv.log_size()
            # the certificate of pair C with the key of pair B: they do not belong together
            install_pair(cert, key, read_bytes(E.c.crt), read_bytes(E.b.key))
            ev = srv.wait_log("new serving certificate refused", since, timeout=t(5))
            check(ev is not None, "no \"new serving certificate refused\" log line; log:\n%s"
                  % srv.log_tail())
            check(ev.get("level") == "error", "refusal logged at level %r" % ev.get("level"))
            for i in range(5):
                n = Conn(srv.port, ctx)
                try:
                    uid = "after-broken-%d" % i
                    check_review_reply(call(n, "POST", "/mutate", fast_body(uid), JSON_CT),
                                       uid, True)
                    eq(n.peer_der, E.b.der, "certificate served after the broken pair")
                finally:
                    n.close()
            # the existing keep-alive connection is unaffected
            check_review_reply(call(c, "POST", "/validate", fast_body("ka-after-broken"),
                                    JSON_CT), "ka-after-broken", False)
            eq(c.connects, 1, "connections of the keep-alive client")
            # SIGHUP forces a reload attempt: still refused, still serving the old pair
            since = srv.log_size()
            srv.signal(signal.SIGHUP)
            check(srv.wait_log("new serving certificate refused", since, timeout=t(5))
                  is not None, "SIGHUP with a broken pair logged no refusal")
            n = Conn(srv.port, ctx)
            try:
                check_review_reply(call(n, "POST", "/validate", fast_body("after-hup"),
                                        JSON_CT), "after-hup", False)
                eq(n.peer_der, E.b.der, "certificate served after SIGHUP")
            finally:
                n.close()
            check(srv.wait_log("serving certificate reloaded", since, timeout=0) is None,
                  "a broken pair was reported as reloaded")
        finally:
            c.close()


@test
def sigterm_under_load_drains():
    nthreads = 8
    grace = 10
    srv = Server(E.work, E.a.crt, E.a.key, "--shutdown-grace", str(grace), name="sigterm")
    with srv:
        ctx = E.a.context()
        lock = threading.Lock()
        started = threading.Barrier(nthreads + 1, timeout=t(15))
        st = {"ok": 0, "inflight_fail": [], "closed_before_send": 0, "got_close": 0,
              "other": [], "per_thread": [0] * nthreads}

        def worker(k):
            c = Conn(srv.port, ctx)
            c.auto_open = 0  # never reconnect: after SIGTERM the listener is gone
            try:
                c.connect()
                started.wait()
                i = 0
                while True:
                    uid = "term-%d-%d" % (k, i)
                    mutating = i % 2 == 1
                    i += 1
                    early = poll_tls(c.sock)
                    if early is not None:
                        with lock:
                            if early == b"":
                                st["closed_before_send"] += 1
                            else:
                                st["other"].append("thread %d: unsolicited bytes %r"
                                                   % (k, early[:80]))
                        return
                    try:
                        c.request("POST", "/mutate" if mutating else "/validate",
                                  body=fast_body(uid), headers=JSON_CT)
                    except (ConnectionError, ssl.SSLError, OSError):
                        with lock:
                            st["closed_before_send"] += 1
                        return
                    try:
                        resp = c.getresponse()
                        rep = Reply(resp, resp.read())
                        check_review_reply(rep, uid, mutating)
                    except Exception as e:
                        with lock:
                            st["inflight_fail"].append("thread %d %s: %r" % (k, uid, e))
                        return
                    with lock:
                        st["ok"] += 1
                        st["per_thread"][k] += 1
                    if (rep.header("Connection") or "").lower() == "close":
                        with lock:
                            st["got_close"] += 1
                        return
            except Exception as e:
                with lock:
                    st["other"].append("thread %d: %r" % (k, e))
            finally:
                c.close()

        threads = [threading.Thread(target=worker, args=(k,), daemon=True)
                   for k in range(nthreads)]
        for th in threads:
            th.start()
        started.wait()
        deadline = time.monotonic() + t(10)
        while time.monotonic() < deadline:
            with lock:
                if min(st["per_thread"]) >= 5 and st["ok"] >= 200:
                    break
            time.sleep(0.01)
        with lock:
            before = st["ok"]
        check(before >= 40, "only %d requests answered before SIGTERM" % before)
        t0 = time.monotonic()
        srv.signal(signal.SIGTERM)
        for th in threads:
            th.join(timeout=max(0.5, t0 + grace + t(5) - time.monotonic()))
        check(all(not th.is_alive() for th in threads), "load threads still running")
        try:
            rc = srv.proc.wait(timeout=max(0.5, t0 + grace + t(5) - time.monotonic()))
        except subprocess.TimeoutExpired:
            raise Fail("server still running %.1f s after SIGTERM (grace %d s); log:\n%s"
                       % (time.monotonic() - t0, grace, srv.log_tail()))
        took = time.monotonic() - t0
        drain = [ev for ev in srv.events() if ev.get("msg") == "stopped accepting; draining"]
        sys.stdout.write("# SIGTERM: %d answered before, %d after; %d got Connection: close, "
                         "%d closed before send; in flight at SIGTERM %s; exit %d after %.2f s\n"
                         % (before, st["ok"] - before, st["got_close"],
                            st["closed_before_send"],
                            drain[0].get("in_flight") if drain else "?", rc, took))
        check(not st["inflight_fail"], "%d in-flight requests failed: %s"
              % (len(st["inflight_fail"]), st["inflight_fail"][:5]))
        check(not st["other"], "unexpected: %s" % st["other"][:5])
        eq(st["got_close"] + st["closed_before_send"], nthreads,
           "threads that saw Connection: close or a closed connection")
        check(st["got_close"] >= 1, "no response carried Connection: close")
        eq(rc, 0, "exit code after SIGTERM")
        check(srv.wait_log("stopped", timeout=0) is not None
              and any(ev.get("msg") == "stopped" for ev in srv.events()),
              "no \"stopped\" log line; log:\n%s" % srv.log_tail())
        check(any(ev.get("msg") == "shutting down" and ev.get("signal") == "SIGTERM"
                  for ev in srv.events()), "no \"shutting down\" SIGTERM log line")


@test
def sigterm_while_body_in_flight():
    srv = Server(E.work, E.a.crt, E.a.key, "--shutdown-grace", "10", name="sigterm-body")
    with srv:
        ctx = E.a.context()
        c = Conn(srv.port, ctx)
        try:
            uid = "body-in-flight-3f6a"
            body = fast_body(uid)
            half = len(body) // 2
            c.putrequest("POST", "/validate")
            c.putheader("Content-Type", "application/json")
            c.putheader("Content-Length", str(len(body)))
            c.endheaders()
            c.send(body[:half])
            time.sleep(0.2)  # let the server take the headers and the first half
            t0 = time.monotonic()
            srv.signal(signal.SIGTERM)
            time.sleep(0.3)
            check(srv.proc.poll() is None, "server exited while a body was still arriving")
            c.send(body[half:])
            resp = c.getresponse()
            rep = Reply(resp, resp.read())
            check_review_reply(rep, uid, False)
            eq((rep.header("Connection") or "").lower(), "close",
               "Connection header of an answer during shutdown")
        finally:
            c.close()
        try:
            rc = srv.proc.wait(timeout=t(10))
        except subprocess.TimeoutExpired:
            raise Fail("server still running %.1f s after SIGTERM" % (time.monotonic() - t0))
        eq(rc, 0, "exit code after SIGTERM")
        check(any(ev.get("msg") == "stopped" for ev in srv.events()), "no \"stopped\" log line")


@test
def sigterm_idle_keepalive_connections():
    """After SIGTERM an idle keep-alive connection may still send one request (answered with
    Connection: close); the others are closed by the server about 1 s after the last request,
    and the process exits 0 long before the grace period."""
    grace = 10
    srv = Server(E.work, E.a.crt, E.a.key, "--shutdown-grace", str(grace), name="sigterm-idle")
    with srv:
        ctx = E.a.context()
        late, idle = Conn(srv.port, ctx), Conn(srv.port, ctx)
        try:
            for k, c in enumerate((late, idle)):
                uid = "idle-warmup-%d" % k
                check_review_reply(call(c, "POST", "/validate", fast_body(uid), JSON_CT), uid,
                                   False)
            t0 = time.monotonic()
            srv.signal(signal.SIGTERM)
            time.sleep(0.3)
            rep = call(late, "GET", "/readyz")
            eq(rep.status, 503, "readyz status while shutting down")
            eq(rep.body, b"shutting down\n", "readyz body while shutting down")
            eq((rep.header("Connection") or "").lower(), "close", "Connection header of readyz")
            # the listener is gone: new connections are not accepted
            late2 = Conn(srv.port, ctx, timeout=t(3))
            accepted = False
            try:
                late2.connect()
                accepted = True
            except (ConnectionError, ssl.SSLError, socket.timeout, OSError):
                pass
            finally:
                late2.close()
            check(not accepted, "a new connection was accepted after SIGTERM")
            idle.sock.settimeout(t(6))
            closed = False
            try:
                closed = idle.sock.recv(1024) == b""
            except (ConnectionError, ssl.SSLError):
                closed = True
            except socket.timeout:
                pass
            waited = time.monotonic() - t0
            check(closed, "idle keep-alive connection still open %.1f s after SIGTERM" % waited)
            check(waited >= 0.8, "idle keep-alive connection closed %.2f s after SIGTERM, "
                  "before the ~1 s drain" % waited)
            check(waited < 1.3 + t(2), "idle keep-alive connection closed only %.1f s after "
                  "SIGTERM" % waited)
        finally:
            late.close()
            idle.close()
        try:
            rc = srv.proc.wait(timeout=t(5))
        except subprocess.TimeoutExpired:
            raise Fail("server still running %.1f s after SIGTERM" % (time.monotonic() - t0))
        eq(rc, 0, "exit code after SIGTERM")
        check(time.monotonic() - t0 < grace, "exit waited for the grace period")
        check(any(ev.get("msg") == "stopped" for ev in srv.events()), "no \"stopped\" log line")


@test
def trickling_clients_are_cut():
    """A client that sends a byte now and then never trips the idle timeout; the deadline sweep
    closes it once it has not completed a request within idle + request timeout, while a
    client that is merely slow but finishes in time is served."""
    idle, req = 2, 2
    with Server(E.work, E.a.crt, E.a.key, "--idle-timeout", str(idle), "--request-timeout",
                str(req), name="trickle") as srv:
        ctx = E.a.context()
        head = tls_socket(srv.port, ctx)
        body_sock = tls_socket(srv.port, ctx)
        t0 = time.monotonic()
        try:
            head_text = ("POST /validate HTTP/1.1\r\nHost: %s\r\nX-Padding: %s"
                         % (SERVICE_DNS, "x" * 200)).encode()
            body = fast_body("trickle-body")
            body_sock.sendall(("POST /validate HTTP/1.1\r\nHost: %s\r\n"
                               "Content-Type: application/json\r\nContent-Length: %d\r\n\r\n"
                               % (SERVICE_DNS, len(body))).encode())
            cut = {}
            limit = idle + req + t(3)
            i = 0
            while len(cut) < 2 and time.monotonic() - t0 < limit:
                for name, sock, data in (("head", head, head_text), ("body", body_sock, body)):
                    if name in cut:
                        continue
                    try:
                        sock.sendall(data[i:i + 1])  # one byte a second: never idle
                    except (OSError, ssl.SSLError):
                        cut[name] = time.monotonic() - t0
                        continue
                    if poll_tls(sock) is not None:
                        cut[name] = time.monotonic() - t0
                i += 1
                time.sleep(0.5)
            for name in ("head", "body"):
                check(name in cut, "trickling %s still open after %.1f s (idle %d + request %d)"
                      % (name, time.monotonic() - t0, idle, req))
                check(cut[name] >= idle + req - 0.5, "trickling %s cut after only %.1f s"
                      % (name, cut[name]))
            ev = srv.wait_log("closed slow connections", timeout=t(2))
            check(ev is not None, "no \"closed slow connections\" log line: %s" % srv.log_tail())
        finally:
            head.close()
            body_sock.close()
        # a keep-alive client that idles, then completes requests, is never cut
        c = Conn(srv.port, ctx)
        try:
            for k in range(3):
                uid = "paced-%d" % k
                check_review_reply(call(c, "POST", "/validate", fast_body(uid), JSON_CT), uid,
                                   False)
                time.sleep(1.5)
            eq(c.connects, 1, "connections used by a paced keep-alive client")
        finally:
            c.close()


@test
def body_memory_is_bounded():
    """Bodies held at once are capped process-wide: past --max-body-memory a request is refused
    with 503 instead of growing the process, and the memory comes back."""
    limit = 64 * 1024
    with Server(E.work, E.a.crt, E.a.key, "--max-body-bytes", str(limit), "--max-body-memory",
                str(2 * limit), name="bodymem") as srv:
        ctx = E.a.context()
        holders = []
        try:
            for k in range(2):  # two requests announce a full body and hold it half-sent
                s = tls_socket(srv.port, ctx)
                s.sendall(("POST /validate HTTP/1.1\r\nHost: %s\r\n"
                           "Content-Type: application/json\r\nContent-Length: %d\r\n\r\n"
                           % (SERVICE_DNS, limit)).encode() + b"{" * 1000)
                holders.append(s)
            time.sleep(0.3)
            c = Conn(srv.port, ctx)
            try:
                rep = call(c, "POST", "/validate", fast_body("third"), JSON_CT)
                check_status_reply(rep, 503, "ServiceUnavailable", "--max-body-memory")
            finally:
                c.close()
        finally:
            for s in holders:
                s.close()
        time.sleep(0.5)  # the held bodies are released with their connections
        still_serving(srv, ctx, "after-budget")


def rss_anon_kib(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("RssAnon:"):
                return int(line.split()[1])
    raise Fail("no RssAnon in /proc/%d/status" % pid)


@test
def large_bodies_do_not_stay_resident():
    """A large body's memory goes back to the system when its request ends. glibc would serve
    the second and later large bodies from the worker's heap and keep their pages (6 MiB
    resident after two 6 MiB bodies, on an idle server); make soak saw it as steps in resident
    memory. Not under the sanitizers: ASan holds freed memory in its quarantine."""
    if SLOW:
        sys.stdout.write("# skipped under sanitizers (their allocator keeps freed memory)\n")
        return
    size = 6 * 1024 * 1024
    with Server(E.work, E.a.crt, E.a.key, "--threads", "1", name="bigbody") as srv:
        c = Conn(srv.port, E.a.context())
        try:
            check_review_reply(call(c, "POST", "/validate", fast_body("warm"), JSON_CT),
                               "warm", False)
            base = rss_anon_kib(srv.proc.pid)
            body = b"[" + b" " * size  # read in full, then refused: not JSON
            for i in range(4):
                if i % 2:
                    c.putrequest("POST", "/validate")
                    c.putheader("Content-Type", "application/json")
                    c.putheader("Transfer-Encoding", "chunked")
                    c.endheaders(message_body=(body[k:k + 65536]
                                               for k in range(0, len(body), 65536)),
                                 encode_chunked=True)
                    resp = c.getresponse()
                    rep = Reply(resp, resp.read())
                else:
                    rep = call(c, "POST", "/validate", body, JSON_CT)
                check_status_reply(rep, 400, "BadRequest", "invalid JSON")
            time.sleep(0.2)
            grown = rss_anon_kib(srv.proc.pid) - base
        finally:
            c.close()
        sys.stdout.write("# after four 6 MiB bodies: %+d KiB resident (anonymous)\n" % grown)
        check(grown < 2048, "four 6 MiB bodies left %d KiB resident after their requests "
              "ended" % grown)


@test
def nul_in_uid_and_object():
    """The apiserver writes NUL as \\u0000; the uid comes back byte for byte and an annotation
    holding one does not turn the review into a 400 (a bypass under failurePolicy Ignore)."""
    with Server(E.work, E.a.crt, E.a.key, name="nul") as srv:
        c = Conn(srv.port, E.a.context())
        try:
            r = review("nul\u0000uid")
            r["request"]["object"]["metadata"]["annotations"] = {"note": "a\u0000b"}
            for path in ("/validate", "/mutate"):
                rep = call(c, "POST", path, json.dumps(r).encode(), JSON_CT)
                eq(rep.status, 200, "status with NUL in strings")
                eq(rep.json()["response"]["uid"], "nul\u0000uid", "uid with a NUL")
        finally:
            c.close()


@test
def command_line_errors():
    """Bad flags are refused with exit code 2 and a message that says what to do."""
    cases = [
        (["serve", "--listen", "127.0.0.1:99999", "--tls-cert", E.a.crt, "--tls-key", E.a.key,
          "--rules", "rules"], "the port must be a number from 0 to 65535"),
        (["serve", "--tls-cert", E.a.crt, "--tls-key", E.a.key, "--listen"],
         "--listen needs a value"),
        (["serve", "--tls-cert", E.a.crt], "--tls-cert and --tls-key are required"),
        (["serve", "--bogus"], "unknown option"),
        (["serve", "--threads", "0", "--tls-cert", E.a.crt, "--tls-key", E.a.key],
         "--threads takes a whole number from 1"),
        (["serve", "--tls-cert", E.a.crt, "--tls-key", E.a.key, "--max-body-bytes", "1048576",
          "--max-body-memory", "65536"], "must be at least --max-body-bytes"),
        (["--version", "extra"], "--version takes no arguments"),
        (["frobnicate"], "unknown command"),
    ]
    for args, want in cases:
        p = subprocess.run([BIN] + args, stdin=subprocess.DEVNULL, capture_output=True,
                           timeout=t(10))
        eq(p.returncode, 2, "exit code of %s" % " ".join(args))
        out = (p.stdout + p.stderr).decode(errors="replace")
        check(want in out, "%s: output lacks %r: %r" % (" ".join(args), want, out))
    for args in (["--help"], ["serve", "--help"], ["serve", "-h"], ["--version"]):
        p = subprocess.run([BIN] + args, stdin=subprocess.DEVNULL, capture_output=True,
                           timeout=t(10))
        eq(p.returncode, 0, "exit code of %s" % " ".join(args))
        check(b"gpuadmit" in p.stdout, "%s printed %r" % (" ".join(args), p.stdout))


@test
def second_signal_stops_at_once():
    """A second SIGTERM while requests drain ends the wait (exit 1), instead of the grace."""
    grace = 20
    with Server(E.work, E.a.crt, E.a.key, "--shutdown-grace", str(grace), name="twice") as srv:
        ctx = E.a.context()
        s = tls_socket(srv.port, ctx)
        try:  # a request whose body never arrives keeps the drain waiting
            s.sendall(("POST /validate HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json"
                       "\r\nContent-Length: 100\r\n\r\n{" % SERVICE_DNS).encode())
            time.sleep(0.3)
            t0 = time.monotonic()
            srv.proc.send_signal(signal.SIGTERM)
            time.sleep(0.5)
            check(srv.proc.poll() is None, "exited before the in-flight request finished")
            srv.proc.send_signal(signal.SIGTERM)
            rc = srv.proc.wait(timeout=t(5))
            eq(rc, 1, "exit code after a second SIGTERM")
            check(time.monotonic() - t0 < t(3), "the second SIGTERM did not stop at once")
            check(any(ev.get("msg") == "second signal; closing the remaining requests"
                      for ev in srv.events()), "no log line for the second signal")
            srv.expect_rc = 1
        finally:
            s.close()


# ---------------------------------------------------------------------------------------------


def watchdog(state):
    name = state.get("current", "?")
    sys.stdout.write("not ok - %s: suite watchdog: over %d s, killing the servers\n"
                     % (name, SUITE_LIMIT_S))
    kill_running()
    sys.stdout.write("e2e: %d passed, %d failed\n" % (state["passed"], state["failed"] + 1))
    sys.stdout.flush()
    if state.get("work"):
        shutil.rmtree(state["work"], ignore_errors=True)
    os._exit(1)


def main():
    state = {"passed": 0, "failed": 0, "current": "setup"}
    dog = threading.Timer(SUITE_LIMIT_S, watchdog, args=(state,))
    dog.daemon = True
    dog.start()
    selected = sys.argv[1:]
    t_suite = time.monotonic()
    times = []
    with tempfile.TemporaryDirectory(prefix="gpuadmit-e2e-") as work:
        E.work = state["work"] = work
        try:
            check(os.access(BIN, os.X_OK), "GPUADMIT_BIN=%s is not an executable" % BIN)
            E.a = CertPair(os.path.join(work, "pki-a"))
            E.b = CertPair(os.path.join(work, "pki-b"))  # the rotation target, another CA
            E.c = CertPair(os.path.join(work, "pki-c"))  # for the broken pair
        except Exception as e:
            sys.stdout.write("not ok - setup: %s\ne2e: 0 passed, 1 failed\n" % e)
            return 1
        for fn in TESTS:
            name = fn.__name__
            if selected and not any(s in name for s in selected):
                continue
            state["current"] = name
            t0 = time.monotonic()
            try:
                fn()
                state["passed"] += 1
                sys.stdout.write("ok - %s\n" % name)
            except Fail as e:
                state["failed"] += 1
                sys.stdout.write("not ok - %s: %s\n" % (name, str(e).replace("\n", "\n#   ")))
            except Exception as e:
                state["failed"] += 1
                sys.stdout.write("not ok - %s: %s: %s\n" % (name, type(e).__name__, e))
                sys.stdout.write(indent("traceback", traceback.format_exc()))
            times.append((name, time.monotonic() - t0))
            sys.stdout.flush()
    dog.cancel()
    sys.stdout.write("# times: %s\n" % ", ".join("%s %.1fs" % nt for nt in times))
    sys.stdout.write("# total %.1f s\n" % (time.monotonic() - t_suite))
    sys.stdout.write("e2e: %d passed, %d failed\n" % (state["passed"], state["failed"]))
    return 1 if state["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
