#!/usr/bin/env python3
"""End-to-end tests of the API-server client (webhook/cluster/kube.c) through the real binary.

    GPUADMIT_BIN=build/release/gpuadmit python3 tests/e2e/test_kube.py [NAME-PART ...]
    GPUADMIT_SLOW=1 ...    slower binary (sanitizers): same assertions, longer time bounds

"gpuadmit serve --kubeconfig KCFG --debug-endpoints" runs against the simulated apiserver in
fake_apiserver.py (TLS, chunked watch streams, fault injection). After each scenario the test
polls GET /debug/view until it equals the view computed here from the fake's objects (bounded
waits), and checks the requests the fake received (pages, continue tokens, resourceVersions,
retries) and the log lines. Python 3 standard library only. Prints "ok - NAME" or
"not ok - NAME: REASON" per test and ends with "e2e-kube: N passed, M failed".
"""
import http.client
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import traceback

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fake_apiserver import FakeAPIServer  # noqa: E402
from common import (CertPair, SLOW, SERVICE_DNS, Fail, ServerProcess, check, eq, indent,  # noqa: E402
                    kill_running, read_bytes, t, tls_connect)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.environ.get("GPUADMIT_BIN", "build/release/gpuadmit")
SUITE_LIMIT_S = 180 if SLOW else 100  # last-resort watchdog; a normal run takes ~30-40 s
WATCH_TIMEOUT = 2       # --watch-timeout, when the binary has it
LIST_PAGE = 200         # --list-page, when the binary has it (else the default 500)
BOOKMARK_INTERVAL = 0.3  # the fake's
TOKEN = "tok-8d1e7c0b5a2f4e69"  # distinctive: it must never show up in a log
GPU = "nvidia.com/gpu"
MIG = "nvidia.com/mig-1g.10gb"


class Skip(Exception):
    pass


def wait_for(cond, timeout, step=0.05):
    """Polls cond() until it is truthy or timeout s pass; returns its last value."""
    deadline = time.monotonic() + timeout
    while True:
        v = cond()
        if v or time.monotonic() >= deadline:
            return v
        time.sleep(step)


# ---------------------------------------------------------------------------------------------
# certificates



class ClientCert:
    """A client CA and a client certificate (clientAuth) made with the openssl CLI."""

    def __init__(self, d):
        os.makedirs(d, exist_ok=True)
        self.ca = os.path.join(d, "client-ca.crt")
        self.crt = os.path.join(d, "client.crt")
        self.key = os.path.join(d, "client.key")
        cakey = os.path.join(d, "client-ca.key")
        ext = os.path.join(d, "ext.cnf")
        with open(ext, "w") as f:
            f.write("basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature\n"
                    "extendedKeyUsage=clientAuth\n")
        steps = [
            ["ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", cakey],
            ["req", "-x509", "-new", "-key", cakey, "-sha256", "-days", "2", "-subj",
             "/CN=client CA", "-addext", "basicConstraints=critical,CA:TRUE", "-addext",
             "keyUsage=critical,keyCertSign", "-out", self.ca],
            ["ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", self.key],
            ["req", "-new", "-key", self.key, "-subj", "/CN=system:serviceaccount:gpuadmit:x",
             "-out", self.crt + ".csr"],
            ["x509", "-req", "-in", self.crt + ".csr", "-CA", self.ca, "-CAkey", cakey,
             "-CAcreateserial", "-days", "2", "-sha256", "-extfile", ext, "-out", self.crt],
        ]
        for s in steps:
            r = subprocess.run(["openssl"] + s, capture_output=True, timeout=30)
            if r.returncode != 0:
                raise RuntimeError("openssl %s: %s" % (s[0], r.stderr.decode()))


# ---------------------------------------------------------------------------------------------
# objects and the view they should produce


def res(gpus, resource=GPU, cpu="1"):
    r = {"cpu": cpu, "memory": "1Gi"}
    if gpus:
        r[resource] = str(gpus)
    return r


def mk_node(name, gpus=8, resource=GPU, ready=True, unschedulable=False, taints=None,
            labels=None, extra=None):
    cap = {"cpu": "64", "memory": "512Gi", "pods": "110"}
    if gpus is not None:
        cap[resource] = str(gpus)
    for k, v in (extra or {}).items():
        cap[k] = str(v)
    spec = {}
    if unschedulable:
        spec["unschedulable"] = True
    if taints:
        spec["taints"] = taints
    return {"metadata": {"name": name, "labels": labels or {
                "kubernetes.io/hostname": name, "nvidia.com/gpu.present": "true"}},
            "spec": spec,
            "status": {"capacity": dict(cap), "allocatable": dict(cap),
                       "conditions": [{"type": "MemoryPressure", "status": "False"},
                                      {"type": "Ready", "status": "True" if ready else "False"}]}}


def mk_pod(name, ns="ml", node="", gpus=1, resource=GPU, phase="Running", priority=None,
           limits_only=False, init=None, sidecar=None, second=None):
    r = res(gpus, resource)
    c = {"name": "main", "image": "trainer:1", "resources":
         {"limits": r} if limits_only else {"requests": r, "limits": r}}
    spec = {"containers": [c, {"name": "metrics", "image": "m:1",
                               "resources": {"requests": {"cpu": "100m"}}}]}
    if second:
        spec["containers"].append({"name": "second", "image": "x:1", "resources": {
            "requests": {second[0]: str(second[1])}, "limits": {second[0]: str(second[1])}}})
    inits = []
    if sidecar is not None:
        inits.append({"name": "sidecar", "image": "s:1", "restartPolicy": "Always",
                      "resources": {"limits": {resource: str(sidecar)}}})
    if init is not None:
        inits.append({"name": "init", "image": "i:1",
                      "resources": {"requests": {resource: str(init)},
                                    "limits": {resource: str(init)}}})
    if inits:
        spec["initContainers"] = inits
    if node:
        spec["nodeName"] = node
    if priority is not None:
        spec["priority"] = priority
    return {"metadata": {"name": name, "namespace": ns}, "spec": spec,
            "status": {"phase": phase}}


def mk_class(name, value, policy=None, default=False):
    o = {"metadata": {"name": name}, "value": value, "globalDefault": default}
    if policy:
        o["preemptionPolicy"] = policy
    return o


def mk_workload(kind, name, ns="ml", replicas=2, gpus=1, resource=GPU):
    tmpl = {"metadata": {"labels": {"app": name}}, "spec": {"containers": [
        {"name": "main", "image": "w:1", "resources": {"limits": res(gpus, resource)}}]}}
    spec = {"template": tmpl, "selector": {"matchLabels": {"app": name}}}
    if kind == "jobs":
        spec["parallelism"] = replicas
        spec["completions"] = replicas
    else:
        spec["replicas"] = replicas
    return {"metadata": {"name": name, "namespace": ns}, "spec": spec}


def is_extended(name):
    return "/" in name and "kubernetes.io/" not in name and not name.startswith("requests.")


def qty(v):
    """Whole units of a simple quantity ("8", 8, "2k", "1000m")."""
    s = str(v)
    if s.endswith("m"):
        return int(s[:-1]) // 1000
    if s.endswith("k"):
        return int(s[:-1]) * 1000
    return int(s)


def container_amounts(c):
    r = c.get("resources") or {}
    req, lim = r.get("requests") or {}, r.get("limits") or {}
    out = {}
    for name in set(req) | set(lim):
        if is_extended(name):
            out[name] = qty(req[name] if name in req else lim[name])
    return out


def pod_demand(spec):
    """max(sum of app containers + sidecars, each init container plus the sidecars before it),
    per extended resource; requests else limits."""
    total, init_peak, sidecars = {}, {}, {}
    for c in spec.get("initContainers") or []:
        a = container_amounts(c)
        if c.get("restartPolicy") == "Always":
            for k, v in a.items():
                sidecars[k] = sidecars.get(k, 0) + v
        else:
            for k in set(a) | set(sidecars):
                init_peak[k] = max(init_peak.get(k, 0), a.get(k, 0) + sidecars.get(k, 0))
    for c in spec.get("containers") or []:
        for k, v in container_amounts(c).items():
            total[k] = total.get(k, 0) + v
    for k, v in sidecars.items():
        total[k] = total.get(k, 0) + v
    out = {k: max(total.get(k, 0), init_peak.get(k, 0)) for k in set(total) | set(init_peak)}
    return {k: v for k, v in out.items() if v}


WORKLOAD_KIND = {"replicasets": "ReplicaSet", "deployments": "Deployment",
                 "statefulsets": "StatefulSet", "jobs": "Job"}


def expected_view(fake):
    snap = fake.snapshot()
    pods = {}
    for key, p in snap["pods"].items():
        if (p.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
            continue
        d = pod_demand(p.get("spec") or {})
        if d:
            pods[key] = {"node": p["spec"].get("nodeName", ""),
                         "priority": p["spec"].get("priority", 0), "demand": d}
    nodes = {}
    for name, n in snap["nodes"].items():
        st, sp = n.get("status") or {}, n.get("spec") or {}
        cap = {k: qty(v) for k, v in (st.get("capacity") or {}).items() if is_extended(k)}
        alloc = {k: qty(v) for k, v in (st.get("allocatable") or {}).items() if is_extended(k)}
        used = {}
        for p in pods.values():
            if p["node"] == name:
                for k, v in p["demand"].items():
                    if k in cap or k in alloc:
                        used[k] = used.get(k, 0) + v
        nodes[name] = {
            "ready": any(c.get("type") == "Ready" and c.get("status") == "True"
                         for c in st.get("conditions") or []),
            "unschedulable": bool(sp.get("unschedulable", False)),
            "labels": (n.get("metadata") or {}).get("labels") or {},
            "taints": [{"key": x["key"], "value": x.get("value", ""), "effect": x["effect"]}
                       for x in sp.get("taints") or []],
            "capacity": cap, "allocatable": alloc, "used": used}
    classes = {name: {"value": c.get("value", 0),
                      "preemptionPolicy": c.get("preemptionPolicy", "PreemptLowerPriority"),
                      "globalDefault": bool(c.get("globalDefault", False))}
               for name, c in snap["priorityclasses"].items()}
    workloads = {}
    for kind, objs in snap.items():
        if kind not in WORKLOAD_KIND:
            continue
        for key, o in objs.items():
            spec = o.get("spec") or {}
            d = pod_demand(((spec.get("template") or {}).get("spec")) or {})
            if d:
                n = spec.get("parallelism" if kind == "jobs" else "replicas", 1)
                workloads["%s/%s" % (WORKLOAD_KIND[kind], key)] = {"replicas": n, "demand": d}
    return {"nodes": nodes, "pods": pods, "priorityClasses": classes, "workloads": workloads}


def normalise(view):
    """The comparable part of /debug/view: zero amounts in "used" and "demand" dropped."""
    out = {}
    for part in ("nodes", "pods", "priorityClasses", "workloads"):
        out[part] = json.loads(json.dumps(view.get(part, {})))
    for n in out["nodes"].values():
        if isinstance(n.get("used"), dict):
            n["used"] = {k: v for k, v in n["used"].items() if v}
    for part in ("pods", "workloads"):
        for p in out[part].values():
            if isinstance(p.get("demand"), dict):
                p["demand"] = {k: v for k, v in p["demand"].items() if v}
    return out


def view_diff(got, want, limit=4):
    lines = []
    for part in want:
        g, w = got.get(part, {}), want[part]
        missing = sorted(set(w) - set(g))
        extra = sorted(set(g) - set(w))
        wrong = sorted(k for k in set(g) & set(w) if g[k] != w[k])
        if missing:
            lines.append("%s missing %d: %s" % (part, len(missing), missing[:limit]))
        if extra:
            lines.append("%s extra %d: %s" % (part, len(extra), extra[:limit]))
        for k in wrong[:limit]:
            lines.append("%s[%s]: got %s, want %s" % (part, k, json.dumps(g[k], sort_keys=True),
                                                      json.dumps(w[k], sort_keys=True)))
        if len(wrong) > limit:
            lines.append("%s: %d more differ" % (part, len(wrong) - limit))
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------
# the binary


FLAGS = {}  # optional serve flags the binary has: {"--watch-timeout": bool, "--list-page": bool}


class Conn(http.client.HTTPSConnection):
    """HTTPS to 127.0.0.1:PORT, verified against the CA and the Service DNS name."""

    def __init__(self, port, ctx, timeout=None):
        super().__init__(SERVICE_DNS, port, context=ctx, timeout=timeout or t(10))
        self.tls_ctx = ctx

    def connect(self):
        self.sock = tls_connect(self.port, self.tls_ctx, self.timeout, nodelay=False)


class Gpuadmit(ServerProcess):
    """One "gpuadmit serve --kubeconfig" process. As a context manager it is always stopped on
    exit; on a clean exit of the block it must stop on SIGTERM with code 0, a clean log and no
    token in it."""

    NAME = "gpuadmit"
    LOG_WHERE = "the log"

    def __init__(self, name, kubeconfig, *extra, page=True, timeout=True):
        self.dir = os.path.join(E.work, name)
        os.makedirs(self.dir, exist_ok=True)
        self.log_path = os.path.join(self.dir, "gpuadmit.log")
        rules = os.path.join(self.dir, "rules")
        os.makedirs(rules, exist_ok=True)
        with open(os.path.join(rules, "empty.yaml"), "w") as f:
            f.write("apiVersion: gpuadmit.io/v1alpha1\nkind: GPUPolicy\n"
                    "metadata:\n  name: empty\nspec:\n  rules: []\n")
        self.args = [BIN, "serve", "--listen", "127.0.0.1:0", "--tls-cert", E.web.crt,
                     "--tls-key", E.web.key, "--rules", rules, "--kubeconfig", kubeconfig,
                     "--debug-endpoints", "--shutdown-grace", "5"]
        if timeout and FLAGS.get("--watch-timeout"):
            self.args += ["--watch-timeout", str(WATCH_TIMEOUT)]
        if page and FLAGS.get("--list-page"):
            self.args += ["--list-page", str(LIST_PAGE)]
        self.args += list(extra)
        self.proc = None
        self.port = None
        self.ctx = E.web.context()
        self.conn = None

    def start(self):
        env = {k: v for k, v in os.environ.items() if "proxy" not in k.lower()}
        env["NO_PROXY"] = env["no_proxy"] = "127.0.0.1,localhost,::1"
        return self.launch(env)

    __enter__ = start

    def __exit__(self, exc_type, exc, tb):
        if exc_type is not None:
            self.stop(t(3))
            if not isinstance(exc, Fail) or "log:" not in str(exc):
                sys.stdout.write(indent("gpuadmit log tail", self.log_tail(25)))
            return False
        self.check_clean_exit(self.stop(t(10)))
        return False

    def stop(self, wait):
        """Closes the client connection; then SIGTERM, wait up to `wait` s, then SIGKILL.
        Returns the exit code (None if killed)."""
        if self.conn is not None:
            self.conn.close()
            self.conn = None
        return super().stop(wait)

    def check_log(self, text):
        check_no_secrets(text)

    def logs(self, msg_part, since=0):
        return [ev for ev in self.events()[since:] if msg_part in str(ev.get("msg", ""))]

    def n_events(self):
        return len(self.events())

    def get(self, path):
        for attempt in range(2):
            if self.conn is None:
                self.conn = Conn(self.port, self.ctx)
            try:
                self.conn.request("GET", path)
                resp = self.conn.getresponse()
                return resp.status, resp.read()
            except (http.client.HTTPException, OSError):
                self.conn.close()
                self.conn = None
                if attempt:
                    raise
        raise Fail("unreachable")

    def view(self):
        status, body = self.get("/debug/view")
        eq(status, 200, "GET /debug/view status (body %r)" % body[:200])
        return json.loads(body)

    def readyz(self):
        return self.get("/readyz")[0]

    def converge(self, fake, what, limit=5.0):
        """Polls /debug/view until it is synced and equals the fake's truth; returns seconds."""
        t0 = time.monotonic()
        deadline = t0 + t(limit)
        while True:
            v = self.view()
            want = expected_view(fake)
            got = normalise(v)
            if v.get("synced") is True and got == want:
                return time.monotonic() - t0
            if time.monotonic() >= deadline:
                raise Fail("%s: the view did not converge within %.1f s (synced=%r):\n%s\n"
                           "log:\n%s" % (what, t(limit), v.get("synced"), view_diff(got, want),
                                         self.log_tail(12)))
            time.sleep(0.05)


def check_no_secrets(text):
    check(TOKEN not in text, "the bearer token appears in the log")
    check("Bearer" not in text, "an Authorization header appears in the log")
    check("PRIVATE KEY" not in text, "key material appears in the log")


def serve_flags():
    """Optional flags of "gpuadmit serve" this binary has."""
    r = subprocess.run([BIN, "serve", "--help"], capture_output=True, timeout=t(10))
    text = (r.stdout + r.stderr).decode(errors="replace")
    return {f: f in text for f in ("--kubeconfig", "--watch-timeout", "--list-page")}


def need_watch_timeout():
    if not FLAGS.get("--watch-timeout"):
        raise Skip("gpuadmit serve has no --watch-timeout flag: a silent watch would take "
                   "300 s + margin to notice")


# ---------------------------------------------------------------------------------------------
# the shared cluster: one fake apiserver and one gpuadmit for most scenarios


class Env:
    pass


E = Env()


def new_fake(**kw):
    kw.setdefault("token", TOKEN)
    kw.setdefault("bookmark_interval", BOOKMARK_INTERVAL)
    fake = FakeAPIServer(E.api.crt, E.api.key, **kw).start()
    E.fakes.append(fake)
    return fake


def populate(fake, n_gpu_pods=1200):
    """20 GPU nodes, n_gpu_pods GPU pods of many shapes, pods without GPUs, finished pods,
    classes and workloads."""
    for i in range(20):
        kw = {}
        if i == 3:
            kw["taints"] = [{"key": GPU, "value": "present", "effect": "NoSchedule"},
                            {"key": "dedicated", "effect": "NoExecute"}]
        if i == 4:
            kw["unschedulable"] = True
        if i == 5:
            kw["ready"] = False
        if i == 6:
            kw.update(resource=MIG, gpus=7)
        if i == 7:
            kw["extra"] = {"example.com/fpga": 2, "hugepages-2Mi": "0"}
        fake.add("nodes", mk_node("gpu-%02d" % i, **kw))
    fake.add("nodes", mk_node("cpu-00", gpus=None))
    for i in range(n_gpu_pods):
        kw = {}
        if i % 10 == 1:
            kw["limits_only"] = True
        if i % 50 == 2:
            kw["init"] = 4
        if i % 70 == 3:
            kw["sidecar"] = 1
        if i % 90 == 4:
            kw["second"] = ("example.com/fpga", 1)
        if i % 13 == 5:
            kw["priority"] = 1000
        node = "" if i % 40 == 7 else "gpu-%02d" % (i % 20)
        if node == "gpu-06":
            kw["resource"] = MIG
        fake.add("pods", mk_pod("train-%04d" % i, ns="team-%d" % (i % 5), node=node,
                                gpus=1 + i % 2, **kw))
    for i in range(100):
        fake.add("pods", mk_pod("web-%03d" % i, ns="web", node="cpu-00", gpus=0))
    for i in range(50):
        fake.add("pods", mk_pod("done-%02d" % i, node="gpu-00", phase="Succeeded"))
    fake.add("priorityclasses", mk_class("gpu-high", 100000, default=False))
    fake.add("priorityclasses", mk_class("gpu-low", 10, policy="Never"))
    fake.add("priorityclasses", mk_class("standard", 0, default=True))
    for i in range(4):
        fake.add("deployments", mk_workload("deployments", "infer-%d" % i, replicas=i + 1))
    fake.add("deployments", mk_workload("deployments", "frontend", gpus=0))
    fake.add("replicasets", mk_workload("replicasets", "infer-0-7c9d", replicas=1))
    fake.add("statefulsets", mk_workload("statefulsets", "db", replicas=3, resource=MIG))
    fake.add("jobs", mk_workload("jobs", "finetune", replicas=4, gpus=2))
    fake.add("jobs", mk_workload("jobs", "etl", gpus=0))


def hang_open(fake, kind, new=False):
    """Hangs the open watch of kind (waiting for one to be open)."""
    check(wait_for(lambda: fake.open_watches(kind) > 0 and fake.hang_watches(kind, new), t(5)),
          "no open %s watch to hang" % kind)


def wait_relisted(srv, kind, e0, what):
    """Waits for a complete list of kind logged after the e0-th log line (a relist may come a
    little after the view converged: the events can arrive before the ERROR that forces it)."""
    check(wait_for(lambda: any(ev.get("msg") == "list" and ev.get("kind") == kind
                               for ev in srv.events()[e0:]), t(5)),
          "%s: %s were not relisted; log:\n%s" % (what, kind, srv.log_tail()))


def main_srv():
    check(getattr(E, "main", None) is not None and E.main.proc.poll() is None,
          "the shared gpuadmit is not running (see the first failure)")
    return E.main, E.fake


def page_of(req):
    return req["query"].get("continue", "")


TESTS = []


def test(fn):
    TESTS.append(fn)
    return fn


# ---------------------------------------------------------------------------------------------
# scenarios on the shared gpuadmit (they run in order)


@test
def initial_paged_list():
    fake = E.fake = new_fake()
    populate(fake)
    kc = fake.kubeconfig(os.path.join(E.work, "main.kubeconfig"), ca_file=E.api.ca, token=TOKEN)
    E.main = Gpuadmit("main", kc)
    E.main.start()
    took = E.main.converge(fake, "initial list", limit=15)
    page = LIST_PAGE if FLAGS.get("--list-page") else 500
    lists = fake.requests_since(0, kind="pods", op="list")
    n_pods = len(fake.snapshot()["pods"]) - 50  # the selector leaves out the finished ones
    want_pages = (n_pods + page - 1) // page
    check(want_pages >= 3, "the test needs 3+ pages")
    eq(len(lists), want_pages, "pod list requests (pages of %d)" % page)
    eq(page_of(lists[0]), "", "continue token of the first page")
    for r in lists:
        eq(r["status"], 200, "page status")
        eq(r["query"].get("limit"), str(page), "limit of every page")
        eq(r["query"].get("fieldSelector"), "status.phase!=Succeeded,status.phase!=Failed",
           "fieldSelector of the pod list")
        check("resourceVersion" not in r["query"], "a list sent a resourceVersion: %r"
              % r["query"])
    check(all(page_of(r) for r in lists[1:]), "pages after the first carry a continue token")
    check(len({page_of(r) for r in lists[1:]}) == len(lists) - 1, "continue tokens repeat")
    watches = fake.requests_since(0, kind="pods", op="watch")
    check(watches, "no pod watch")
    w = watches[0]["query"]
    eq(w.get("resourceVersion"), lists[-1]["rv"], "the first watch's resourceVersion")
    eq(w.get("allowWatchBookmarks"), "true", "allowWatchBookmarks")
    eq(w.get("fieldSelector"), "status.phase!=Succeeded,status.phase!=Failed",
       "fieldSelector of the pod watch")
    check(w.get("timeoutSeconds", "").isdigit(), "watch timeoutSeconds: %r" % w)
    for kind in ("nodes", "priorityclasses", "replicasets", "deployments", "statefulsets",
                 "jobs"):
        check(fake.requests_since(0, kind=kind, op="watch"), "no %s watch" % kind)
    eq(E.main.readyz(), 200, "/readyz after the first sync")
    lines = E.main.logs("list")
    check(any(ev.get("kind") == "pods" and ev.get("pages") == want_pages for ev in lines),
          "no \"list\" log line for pods with %d pages" % want_pages)
    sys.stdout.write("# initial sync of %d pods in %d pages: %.2f s\n" % (n_pods, want_pages,
                                                                          took))


@test
def watch_adds_modifies_deletes():
    srv, fake = main_srv()
    n0 = fake.n_requests()
    for i in range(30):
        fake.add("pods", mk_pod("new-%02d" % i, ns="team-9", node="gpu-1%d" % (i % 10),
                                gpus=1 + i % 3, priority=i))
    for i in range(0, 60, 3):  # rebind, resize
        fake.modify("pods", mk_pod("train-%04d" % i, ns="team-%d" % (i % 5),
                                   node="gpu-%02d" % ((i + 1) % 20), gpus=4))
    for i in range(1, 40, 4):
        fake.delete("pods", "train-%04d" % i, "team-%d" % (i % 5))
    # finishing pods leave the selector: the watch sends DELETED
    fake.modify("pods", mk_pod("train-0100", ns="team-0", node="gpu-00", phase="Succeeded"))
    fake.modify("pods", mk_pod("train-0102", ns="team-2", node="gpu-02", phase="Failed"))
    fake.modify("nodes", mk_node("gpu-00", gpus=16, taints=[
        {"key": GPU, "effect": "NoSchedule"}]))
    fake.modify("nodes", mk_node("gpu-04"))  # schedulable again
    fake.modify("nodes", mk_node("gpu-01", ready=False, unschedulable=True))
    fake.add("nodes", mk_node("gpu-20", gpus=4, labels={"pool": "new"}))
    fake.delete("nodes", "gpu-19")
    fake.modify("priorityclasses", mk_class("gpu-low", 20, policy="PreemptLowerPriority"))
    fake.add("priorityclasses", mk_class("batch", 5))
    fake.delete("priorityclasses", "standard")
    fake.modify("deployments", mk_workload("deployments", "infer-1", replicas=7))
    fake.modify("deployments", mk_workload("deployments", "infer-2", gpus=0))  # no longer GPU
    fake.modify("deployments", mk_workload("deployments", "frontend", gpus=1))  # now GPU
    fake.delete("jobs", "finetune", "ml")
    fake.add("statefulsets", mk_workload("statefulsets", "cache", replicas=2, gpus=3))
    srv.converge(fake, "after adds, modifies and deletes")
    lists = [r for r in fake.requests_since(n0) if r["op"] == "list"]
    eq(lists, [], "list requests while watches worked")


@test
def events_split_across_chunks():
    srv, fake = main_srv()
    before = dict(fake.stats)
    for round_ in range(3):
        for i in range(100):
            fake.modify("pods", mk_pod("train-%04d" % (200 + i), ns="team-%d" % (i % 5),
                                       node="gpu-%02d" % ((i + round_) % 20), gpus=1 + round_))
        time.sleep(0.05)
    srv.converge(fake, "after bursts split across chunks")
    check(fake.stats["split_events"] > before["split_events"],
          "the fake split no event across chunks: %r" % fake.stats)
    check(fake.stats["packed_chunks"] > before["packed_chunks"],
          "the fake packed no chunk with several events: %r" % fake.stats)


@test
def bookmarks_advance_resource_version():
    """Kinds without changes learn newer resourceVersions from bookmarks only: after a
    compaction, their re-watch starts at a bookmark's resourceVersion and needs no relist."""
    srv, fake = main_srv()
    fake.modify("pods", mk_pod("train-0300", ns="team-0", node="gpu-00"))
    mark = fake.current_rv()
    b0 = fake.stats["bookmarks"]
    # every kind gets a bookmark after the mark (they come every BOOKMARK_INTERVAL s)
    check(wait_for(lambda: fake.stats["bookmarks"] >= b0 + 14, t(5)),
          "bookmarks sent: %d" % (fake.stats["bookmarks"] - b0))
    time.sleep(BOOKMARK_INTERVAL * 2)
    fake.compact()
    n0 = fake.n_requests()
    fake.drop_watches()
    check(wait_for(lambda: {r["kind"] for r in fake.requests_since(n0, op="watch")} >=
                   {"jobs", "statefulsets", "priorityclasses"}, t(5)),
          "no re-watch after the drop")
    for r in fake.requests_since(n0, op="watch"):
        if r["kind"] in ("jobs", "statefulsets", "priorityclasses", "replicasets"):
            check(int(r["query"]["resourceVersion"]) >= mark,
                  "%s re-watched from %s, older than the bookmarks' %d"
                  % (r["kind"], r["query"]["resourceVersion"], mark))
            eq(r["status"], 200, "status of the %s re-watch" % r["kind"])
    fake.modify("jobs", mk_workload("jobs", "finetune-2", replicas=2))
    srv.converge(fake, "after bookmarks and a drop")
    eq([r["kind"] for r in fake.requests_since(n0, op="list")], [],
       "kinds relisted although bookmarks kept them current")


@test
def watch_410_status_relists():
    srv, fake = main_srv()
    e0 = srv.n_events()
    # no more events or bookmarks for nodes: the client's resourceVersion goes stale
    hang_open(fake, "nodes", new=True)
    for i in range(5):
        fake.modify("pods", mk_pod("train-%04d" % (400 + i), ns="team-%d" % (i % 5),
                                   node="gpu-03"))
    fake.compact()
    fake.unhang(new_only=True)
    n0 = fake.n_requests()
    fake.drop_watches("nodes")
    fake.modify("nodes", mk_node("gpu-02", gpus=6))
    fake.delete("nodes", "gpu-18")
    srv.converge(fake, "after a 410 on the node watch")
    reqs = fake.requests_since(n0, kind="nodes")
    check(any(r["op"] == "watch" and r["status"] == 410 for r in reqs),
          "no node watch got 410: %r" % [(r["op"], r["status"]) for r in reqs])
    check(any(r["op"] == "list" for r in reqs), "nodes were not relisted after the 410")
    check(srv.logs("relist (410 Gone)", e0), "no \"relist (410 Gone)\" log line")
    fake.unhang()


@test
def error_event_410_relists():
    srv, fake = main_srv()
    e0 = srv.n_events()
    fake.compact()
    n0 = fake.n_requests()
    fake.expire_watches("pods")  # ERROR {"code":410} on the open watch
    fake.modify("pods", mk_pod("train-0500", ns="team-0", node="gpu-05", gpus=3))
    srv.converge(fake, "after an ERROR 410 event")
    wait_relisted(srv, "pods", e0, "ERROR 410 event")
    check(fake.requests_since(n0, kind="pods", op="list"), "pods not relisted")
    check(any(ev.get("via") == "ERROR event" for ev in srv.logs("relist (410 Gone)", e0)),
          "no \"relist (410 Gone)\" line for the ERROR event")
    # the same as a watch's first event (gone_mode "event"): 200, then ERROR 410
    fake.gone_mode = "event"
    try:
        hang_open(fake, "statefulsets", new=True)
        fake.modify("pods", mk_pod("train-0501", ns="team-1", node="gpu-05"))
        fake.compact()
        fake.unhang(new_only=True)
        n1 = fake.n_requests()
        fake.drop_watches("statefulsets")
        fake.modify("statefulsets", mk_workload("statefulsets", "db", replicas=5,
                                                resource=MIG))
        srv.converge(fake, "after a watch that opened with an ERROR 410")
        check(fake.requests_since(n1, kind="statefulsets", op="list"),
              "statefulsets not relisted")
    finally:
        fake.gone_mode = "http"
        fake.unhang()


@test
def continue_expired_mid_list_restarts():
    srv, fake = main_srv()
    e0 = srv.n_events()
    fake.expire_continue(1)
    n0 = fake.n_requests()
    fake.expire_watches("pods")  # a relist of the 1,200+ pods, in pages
    for i in range(10):
        fake.delete("pods", "train-%04d" % (600 + i), "team-%d" % (i % 5))
    srv.converge(fake, "after a relist whose continue token expired", limit=8)
    wait_relisted(srv, "pods", e0, "continue token expired")
    # (a list that was already under way may be the one whose token expires)
    seq = [(bool(page_of(r)), r["status"]) for r in fake.requests_since(n0, "pods", "list")]
    check((True, 410) in seq, "no continue token expired: %r; pod requests since: %r; open "
          "pod watches %d; log:\n%s" % (seq, [(r["op"], r["status"], page_of(r)[:6]) for r in
                                           fake.requests_since(n0 - 3, "pods")],
                                        fake.open_watches("pods"), srv.log_tail()))
    rest = seq[seq.index((True, 410)) + 1:]
    check(len(rest) >= 3 and rest[0] == (False, 200) and all(p == (True, 200) for p in rest[1:]),
          "after the expired token the list must start over and finish: %r" % seq)
    check(srv.logs("continue token expired", e0), "no log line for the expired continue token")


@test
def abrupt_disconnect_resumes_without_loss():
    srv, fake = main_srv()
    # a pod watch must be open first: one still being set up after the scenario before (a
    # relist) would get the events by list, and the cut would never happen
    deadline = time.monotonic() + t(10)
    while fake.open_watches("pods") == 0 and time.monotonic() < deadline:
        time.sleep(0.05)
    check(fake.open_watches("pods") > 0, "no pod watch open before the test")
    n0 = fake.n_requests()
    c0 = len(fake.cuts)
    fake.drop_on_next_event("pods")  # half of the next event, then the connection dies
    for i in range(20):
        fake.modify("pods", mk_pod("train-%04d" % (700 + i), ns="team-%d" % (i % 5),
                                   node="gpu-%02d" % (i % 20), gpus=2))
    srv.converge(fake, "after an abrupt disconnect")
    check(len(fake.cuts) > c0, "no event was cut in half")
    cut_at, _, cut_rv = fake.cuts[c0]
    rewatch = [r for r in fake.requests_since(n0, kind="pods", op="watch") if r["t"] > cut_at]
    check(rewatch, "no pod re-watch after the cut")
    rv = int(rewatch[0]["query"]["resourceVersion"])
    check(rv < cut_rv, "the re-watch started at %d, past the event cut in half (%d)"
          % (rv, cut_rv))
    eq(fake.requests_since(n0, kind="pods", op="list"), [], "pod lists after a disconnect")


@test
def reset_watches_resume_without_loss():
    """Every watch ends with a TCP RST (a load balancer or an apiserver restart): each resumes
    from its last resourceVersion, no list, and the changes made meanwhile arrive."""
    srv, fake = main_srv()
    deadline = time.monotonic() + t(10)
    while fake.open_watches() < 7 and time.monotonic() < deadline:
        time.sleep(0.05)
    n0 = fake.n_requests()
    check(fake.reset_watches() > 0, "no watch open to reset")
    for i in range(10):
        fake.modify("pods", mk_pod("train-%04d" % (720 + i), ns="team-%d" % (i % 5),
                                   node="gpu-%02d" % (i % 20), gpus=1))
    fake.modify("priorityclasses", mk_class("gpu-reset", 150000))
    srv.converge(fake, "after every watch was reset")
    check(fake.requests_since(n0, op="watch"), "no re-watch after the reset")
    eq(fake.requests_since(n0, op="list"), [], "lists after a reset")


@test
def hanging_watch_is_noticed():
    need_watch_timeout()
    srv, fake = main_srv()
    e0 = srv.n_events()
    hang_open(fake, "priorityclasses")
    t0 = time.monotonic()
    fake.modify("priorityclasses", mk_class("gpu-high", 200000))
    took = srv.converge(fake, "after a hung watch", limit=WATCH_TIMEOUT + 8)
    silence = WATCH_TIMEOUT + 2  # timeoutSeconds + the client's margin (kube.c)
    check(took >= WATCH_TIMEOUT - 0.5, "the hung watch was abandoned after %.1f s, before "
          "its timeoutSeconds (%d)" % (took, WATCH_TIMEOUT))
    check(took <= silence + t(2.5), "the hung watch was noticed after %.1f s" % took)
    check(srv.logs("watch silent", e0), "no \"watch silent\" log line; log:\n%s" % srv.log_tail())
    fake.unhang()
    sys.stdout.write("# hung watch noticed after %.1f s (timeout %d s)\n"
                     % (time.monotonic() - t0, WATCH_TIMEOUT))


@test
def malformed_line_relists():
    srv, fake = main_srv()
    e0 = srv.n_events()
    n0 = fake.n_requests()
    fake.malformed("nodes")
    fake.modify("nodes", mk_node("gpu-08", gpus=2))
    srv.converge(fake, "after a malformed event line")
    wait_relisted(srv, "nodes", e0, "malformed line")
    check(fake.requests_since(n0, kind="nodes", op="list"), "nodes not relisted")
    check(srv.logs("watch stream broken", e0), "no \"watch stream broken\" log line")


@test
def server_errors_retried_with_backoff():
    srv, fake = main_srv()
    e0 = srv.n_events()
    n0 = fake.n_requests()
    fake.fail_next(4, 500, kind="pods", op="watch")
    fake.fail_next(2, 429, kind="nodes", op="watch")
    fake.fail_next(2, 503, kind="jobs", op="list")
    fake.drop_watches("pods")
    fake.drop_watches("nodes")
    fake.expire_watches("jobs")  # a relist, whose first two tries fail
    fake.modify("pods", mk_pod("train-0800", ns="team-0", node="gpu-09", gpus=5))
    fake.modify("nodes", mk_node("gpu-09", gpus=12))
    fake.add("jobs", mk_workload("jobs", "sweep", replicas=3))
    srv.converge(fake, "after 500s and 429s", limit=12)
    wait_relisted(srv, "jobs", e0, "503s")
    pods = fake.requests_since(n0, kind="pods", op="watch")
    eq([r["status"] for r in pods[:5]], [500, 500, 500, 500, 200], "pod watch statuses")
    nodes = fake.requests_since(n0, kind="nodes", op="watch")
    eq([r["status"] for r in nodes[:3]], [429, 429, 200], "node watch statuses")
    gaps = [b["t"] - a["t"] for a, b in zip(nodes, nodes[1:3])]
    check(all(g >= 0.9 for g in gaps), "Retry-After: 1 not honoured after 429: gaps %r" % gaps)
    jobs = fake.requests_since(n0, kind="jobs", op="list")
    eq([r["status"] for r in jobs[:3]], [503, 503, 200], "job list statuses")
    # full jitter under an exponential ceiling from 200 ms
    retries = [ev for ev in srv.logs("watch restarted", e0)
               if ev.get("kind") == "pods" and ev.get("status") == 500]
    eq(len(retries), 4, "\"watch restarted\" lines for the pod 500s")
    for i, ev in enumerate(retries):
        check(0 <= ev["retry_in_ms"] <= 200 * 2 ** (i + 1),
              "backoff %d ms after failure %d (ceiling %d)" % (ev["retry_in_ms"], i + 1,
                                                               200 * 2 ** (i + 1)))


@test
def sigterm_while_watches_block():
    srv, fake = main_srv()
    check(wait_for(lambda: fake.open_watches() >= 7, t(5)),
          "open watches: %d" % fake.open_watches())
    t0 = time.monotonic()
    rc = srv.stop(t(10))
    took = time.monotonic() - t0
    E.main = None
    eq(rc, 0, "exit code after SIGTERM")
    check(took < t(3), "exit took %.1f s with watches open" % took)
    srv.check_clean_exit(rc)
    check(wait_for(lambda: fake.open_watches() == 0, t(3)),
          "watches still open after exit: %d" % fake.open_watches())


# ---------------------------------------------------------------------------------------------
# scenarios with their own gpuadmit


@test
def readyz_503_until_synced():
    fake = new_fake()
    populate(fake, n_gpu_pods=20)
    fake.fail_next(10 ** 6, 503, kind="priorityclasses", op="list")
    kc = fake.kubeconfig(os.path.join(E.work, "readyz.kubeconfig"), ca_file=E.api.ca,
                         token=TOKEN)
    with Gpuadmit("readyz", kc) as srv:
        check(wait_for(lambda: len(fake.requests_since(0, "priorityclasses", "list")) >= 2,
                       t(5)), "priority classes were not tried twice")
        eq(srv.readyz(), 503, "/readyz while one kind cannot be listed")
        eq(srv.view().get("synced"), False, "synced while one kind cannot be listed")
        fake.clear_faults()
        check(wait_for(lambda: srv.readyz() == 200, t(8)), "/readyz not 200 after the sync")
        srv.converge(fake, "after the first sync")


@test
def wrong_token_then_rotation():
    fake = new_fake()
    populate(fake, n_gpu_pods=20)
    tf = os.path.join(E.work, "token-file")
    with open(tf, "w") as f:
        f.write("not-the-token\n")
    kc = fake.kubeconfig(os.path.join(E.work, "token.kubeconfig"), ca_file=E.api.ca,
                         token_file=tf)
    with Gpuadmit("token", kc) as srv:
        check(wait_for(lambda: srv.logs("401"), t(5)), "no log line about the 401")
        time.sleep(0.5)
        eq(srv.readyz(), 503, "/readyz while the apiserver refuses the token")
        ev = srv.logs("401")[0]
        eq(ev.get("level"), "error", "level of the 401 line")
        eq(ev.get("status"), 401, "status field of the 401 line")
        with open(tf + ".new", "w") as f:
            f.write(TOKEN + "\n")
        os.rename(tf + ".new", tf)
        srv.converge(fake, "after the token was fixed", limit=12)
        # rotation: the server takes only the new token; the file is replaced (as the kubelet
        # does, atomically); a 401 makes the client re-read it and retry once
        e0 = srv.n_events()
        fake.token = TOKEN + "-rotated"
        with open(tf + ".new", "w") as f:
            f.write(fake.token)
        os.rename(tf + ".new", tf)
        n0 = fake.n_requests()
        fake.drop_watches()
        fake.modify("pods", mk_pod("train-0001", ns="team-1", node="gpu-02", gpus=3))
        srv.converge(fake, "after the token rotated")
        st = [r["status"] for r in fake.requests_since(n0, "pods", "watch")]
        check(st[:2] == [401, 200], "pod watch statuses after rotation: %r" % st)
        eq([ev for ev in srv.logs("401", e0) if ev.get("level") == "error"], [],
           "errors logged for a 401 that a re-read token fixed")
        check(all(r["auth"] == "Bearer " + fake.token
                  for r in fake.requests_since(n0) if r["status"] == 200),
              "a request that succeeded after rotation carried another token")


@test
def client_certificate_and_ca_data():
    cc = E.client
    fake = new_fake(client_ca=cc.ca, token="no-token-works-here")
    populate(fake, n_gpu_pods=20)
    kc = fake.kubeconfig(os.path.join(E.work, "cert-data.kubeconfig"),
                         ca_data=read_bytes(E.api.ca), cert_data=read_bytes(cc.crt),
                         key_data=read_bytes(cc.key))
    with Gpuadmit("cert-data", kc) as srv:
        srv.converge(fake, "client certificate data and CA data")
    check(fake.requests and all(r["auth"] is None for r in fake.requests),
          "requests carried an Authorization header")
    # files, relative to the kubeconfig's directory
    kdir = os.path.join(E.work, "kcdir")
    os.makedirs(kdir, exist_ok=True)
    for src, dst in ((cc.crt, "c.crt"), (cc.key, "c.key"), (E.api.ca, "ca.crt")):
        shutil.copy(src, os.path.join(kdir, dst))
    kc = fake.kubeconfig(os.path.join(kdir, "config"), ca_file="ca.crt", cert="c.crt",
                         key="c.key")
    n0 = fake.n_requests()
    with Gpuadmit("cert-files", kc) as srv:
        srv.converge(fake, "client certificate files and a CA file")
    check(len(fake.requests_since(n0)) >= 14, "too few requests with the certificate files")


@test
def wrong_ca_is_refused():
    fake = new_fake()
    populate(fake, n_gpu_pods=5)
    kc = fake.kubeconfig(os.path.join(E.work, "wrongca.kubeconfig"), ca_file=E.client.ca,
                         token=TOKEN)
    with Gpuadmit("wrongca", kc) as srv:
        check(wait_for(lambda: srv.logs("list failed"), t(5)), "no failure logged")
        eq(fake.n_requests(), 0, "requests that passed an unverified TLS handshake")
        eq(srv.readyz(), 503, "/readyz without a verified apiserver")


@test
def optional_kinds_absent_forbidden_and_served():
    """The node autoscalers' kinds are optional: a cluster without Karpenter's CRD (404) or
    that keeps gpuadmit off the ConfigMap (403) syncs without them; served, they are read."""
    fake = new_fake()
    populate(fake, n_gpu_pods=5)
    kc = fake.kubeconfig(os.path.join(E.work, "absent.kubeconfig"), ca_file=E.api.ca,
                         token=TOKEN)
    with Gpuadmit("absent", kc) as srv:
        srv.converge(fake, "without the optional kinds")
        eq(srv.readyz(), 200, "/readyz without the optional kinds")
        for kind in ("configmaps", "nodepools"):
            evs = [e for e in srv.logs("optional kind not served (404)") if e.get("kind") == kind]
            eq(len(evs), 1, "one line for %s not served" % kind)
        eq(srv.view().get("autoscalers"), {}, "autoscalers in the view")
        check(srv.view()["age_s"] < 60, "an absent kind ages the view")
    fake = new_fake(optional=("configmaps", "nodepools"))
    populate(fake, n_gpu_pods=5)
    fake.fail_next(10 ** 6, 403, kind="nodepools", op="list")
    with open(os.path.join(ROOT, "tests/data/autoscaler/ca-status-yaml-status_test.yaml")) as f:
        status_text = f.read()
    fake.put("configmaps", {"metadata": {"name": "cluster-autoscaler-status",
                                         "namespace": "kube-system"},
                            "data": {"status": status_text}})
    fake.put("configmaps", {"metadata": {"name": "other", "namespace": "kube-system"},
                            "data": {"status": "not the autoscaler's"}})
    kc = fake.kubeconfig(os.path.join(E.work, "served.kubeconfig"), ca_file=E.api.ca,
                         token=TOKEN)
    with Gpuadmit("served", kc) as srv:
        srv.converge(fake, "with the CA status, NodePools forbidden")
        eq(srv.readyz(), 200, "/readyz with NodePools forbidden")
        ev = [e for e in srv.logs("optional kind forbidden (403)") if e.get("kind") == "nodepools"]
        eq(len(ev), 1, "one line for the 403")
        eq(ev[0].get("level"), "warn", "level of the 403 line")
        lists = fake.requests_since(0, "configmaps", "list")
        sels = {r["query"].get("fieldSelector") for r in lists}
        check("metadata.name=cluster-autoscaler-status" in sels and
              all(s and s.startswith("metadata.name=") for s in sels),
              "every ConfigMap list names one ConfigMap (RBAC resourceNames): %r" % sels)
        groups = srv.view()["autoscalers"]["ConfigMap/kube-system/cluster-autoscaler-status"]
        eq(sorted(groups["groups"]), ["sample-node-group"], "the status's node groups")
        eq(groups["groups"]["sample-node-group"]["headroom"], 0, "a group in Backoff")
        # a change of the ConfigMap is watched
        fake.put("configmaps", {"metadata": {"name": "cluster-autoscaler-status",
                                             "namespace": "kube-system"},
                                "data": {"status": "autoscalerStatus: [broken"}})
        check(wait_for(lambda: "error" in srv.view()["autoscalers"].get(
            "ConfigMap/kube-system/cluster-autoscaler-status", {}), t(5)),
            "a status that does not parse is kept with its error")


@test
def device_plugin_configs_read_by_name():
    """The device plugin's config ConfigMaps the policy names are read by name, each a list
    with a metadata.name field selector (what RBAC's resourceNames match), never all
    ConfigMaps: gpuadmit explain then names a node whose nvidia.com/device-plugin.config label
    picks a key the config lacks. A namespace the apiserver does not serve (404 here) is read
    as none, and another ConfigMap with that key is no config the policy names."""
    fake = new_fake(optional=("configmaps",))
    labels = {"kubernetes.io/hostname": "t4-0", "nvidia.com/gpu.present": "true",
              "nvidia.com/device-plugin.config": "tesla-t4"}
    fake.add("nodes", mk_node("t4-0", gpus=1, labels=labels))
    fake.add("pods", mk_pod("bench-0", node="t4-0"))
    fake.add("pods", mk_pod("bench-1", phase="Pending"))
    ts = ("version: v1\nsharing:\n  timeSlicing:\n    resources:\n    - name: nvidia.com/gpu\n"
          "      replicas: 4\n")
    fake.put("configmaps", {"metadata": {"name": "nvidia-device-plugin-config",
                                         "namespace": "kube-system"}, "data": {"t4": ts}})
    fake.put("configmaps", {"metadata": {"name": "other", "namespace": "kube-system"},
                            "data": {"tesla-t4": ts}})
    kc = fake.kubeconfig(os.path.join(E.work, "plugin.kubeconfig"), ca_file=E.api.ca,
                         token=TOKEN)
    p = subprocess.run([BIN, "explain", "--kubeconfig", kc, "-o", "json"],
                       capture_output=True, text=True, timeout=t(30))
    eq(p.returncode, 1, "exit code (a pod is Pending); stderr: %s" % p.stderr[-400:])
    pods = json.loads(p.stdout)["pods"]
    eq([x["name"] for x in pods], ["bench-1"], "Pending pods")
    reasons = {r["code"]: r for r in pods[0]["reasons"]}
    check("device-plugin-config-missing" in reasons, "codes: %r" % sorted(reasons))
    msg = reasons["device-plugin-config-missing"]["message"]
    check("kube-system/nvidia-device-plugin-config: t4" in msg and "tesla-t4" in msg, msg)
    sels = sorted(r["query"].get("fieldSelector") for r in fake.requests_since(0, "configmaps",
                                                                            "list"))
    for name in ("nvidia-device-plugin-config", "time-slicing-config", "cluster-autoscaler-status"):
        check("metadata.name=" + name in sels, "no list naming %s: %r" % (name, sels))
    check(all(s.startswith("metadata.name=") for s in sels), "a list of every ConfigMap: %r" % sels)
    # a device plugin config the apiserver fails to list (500, for good) is optional: the view
    # syncs without it, and explain still answers
    fake.fail_next(10 ** 6, 500, kind="configmaps", op="list",
                   field_selector="metadata.name=nvidia-device-plugin-config")
    p = subprocess.run([BIN, "explain", "--kubeconfig", kc, "-o", "json", "--timeout", "20"],
                       capture_output=True, text=True, timeout=t(40))
    eq(p.returncode, 1, "exit code with the config failing; stderr: %s" % p.stderr[-400:])
    codes = [r["code"] for r in json.loads(p.stdout)["pods"][0]["reasons"]]
    eq(codes, ["insufficient"], "codes without the config")
    fake.clear_faults()
    # near miss: with the key there, the node is only full
    fake.put("configmaps", {"metadata": {"name": "nvidia-device-plugin-config",
                                         "namespace": "kube-system"},
                            "data": {"t4": ts, "tesla-t4": ts}})
    p = subprocess.run([BIN, "explain", "--kubeconfig", kc, "-o", "json"],
                       capture_output=True, text=True, timeout=t(30))
    codes = [r["code"] for r in json.loads(p.stdout)["pods"][0]["reasons"]]
    eq(codes, ["insufficient"], "codes with the key there")


@test
def kubeconfig_refusals():
    """Unusable kubeconfigs stop the start with a message naming the problem."""
    fake = E.fake or new_fake()
    base = ("apiVersion: v1\nkind: Config\ncurrent-context: c\n"
            "contexts: [{name: c, context: {cluster: k, user: u}}]\n"
            "clusters: [{name: k, cluster: {server: '%s', certificate-authority: '%s'}}]\n"
            % (fake.url, E.api.ca))
    cases = [
        (base + "users: [{name: u, user: {exec: {command: aws}}}]\n", "exec"),
        (base + "users: [{name: u, user: {auth-provider: {name: gcp}}}]\n", "auth-provider"),
        (base + "users: [{name: v, user: {token: x}}]\n", "no user called"),
        (base.replace("current-context: c", "current-context: zz") + "users: []\n",
         "no context called"),
        ("current-context: c\ncontexts: &a [{name: c}]\n", "anchors"),
        (base + "users: [{name: u, user: {client-certificate-data: '!!!', "
                "client-key-data: '!!!'}}]\n", "base64"),
    ]
    for i, (text, want) in enumerate(cases):
        path = os.path.join(E.work, "bad-%d.kubeconfig" % i)
        with open(path, "w") as f:
            f.write(text)
        p = subprocess.run([BIN, "serve", "--listen", "127.0.0.1:0", "--tls-cert", E.web.crt,
                            "--tls-key", E.web.key, "--rules", os.path.join(ROOT, "rules"),
                            "--kubeconfig", path], stdin=subprocess.DEVNULL,
                           capture_output=True, timeout=t(10))
        out = (p.stdout + p.stderr).decode(errors="replace")
        check(p.returncode != 0, "case %d (%s): gpuadmit started; output %r" % (i, want, out))
        check(want in out, "case %d: output lacks %r: %r" % (i, want, out[-400:]))


# ---------------------------------------------------------------------------------------------


def watchdog(state):
    sys.stdout.write("not ok - %s: suite watchdog: over %d s, killing the servers\n"
                     % (state.get("current", "?"), SUITE_LIMIT_S))
    kill_running()
    sys.stdout.write("e2e-kube: %d passed, %d failed\n" % (state["passed"], state["failed"] + 1))
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
    skipped = 0
    E.fakes = []
    E.fake = None
    E.main = None
    with tempfile.TemporaryDirectory(prefix="gpuadmit-e2e-kube-") as work:
        E.work = state["work"] = work
        try:
            check(os.access(BIN, os.X_OK), "GPUADMIT_BIN=%s is not an executable" % BIN)
            FLAGS.update(serve_flags())
            check(FLAGS["--kubeconfig"], "gpuadmit serve has no --kubeconfig flag yet")
            E.api = CertPair(os.path.join(work, "pki-api"))  # the fake apiserver's
            E.web = CertPair(os.path.join(work, "pki-web"))  # the webhook's
            E.client = ClientCert(os.path.join(work, "pki-client"))
        except Exception as e:
            sys.stdout.write("not ok - setup: %s\ne2e-kube: 0 passed, 1 failed\n" % e)
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
            except Skip as e:
                skipped += 1
                sys.stdout.write("ok - %s # SKIP %s\n" % (name, e))
            except Fail as e:
                state["failed"] += 1
                sys.stdout.write("not ok - %s: %s\n" % (name, str(e).replace("\n", "\n#   ")))
            except Exception as e:
                state["failed"] += 1
                sys.stdout.write("not ok - %s: %s: %s\n" % (name, type(e).__name__, e))
                sys.stdout.write(indent("traceback", traceback.format_exc()))
            times.append((name, time.monotonic() - t0))
            sys.stdout.flush()
        if E.main is not None:
            E.main.stop(t(5))
        for fake in E.fakes:
            fake.stop()
    dog.cancel()
    sys.stdout.write("# times: %s\n" % ", ".join("%s %.1fs" % nt for nt in times))
    sys.stdout.write("# total %.1f s%s\n" % (time.monotonic() - t_suite,
                                             ", %d skipped" % skipped if skipped else ""))
    sys.stdout.write("e2e-kube: %d passed, %d failed\n" % (state["passed"], state["failed"]))
    return 1 if state["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
