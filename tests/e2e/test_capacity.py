#!/usr/bin/env python3
"""End-to-end tests of the capacity rule over TLS: the stall scenario from a cluster snapshot
(ReplicaSets and kubectl-scale-shaped Scale requests), and a device-plugin restart seen through
a watched (simulated) API server. Standard library only.

Run: GPUADMIT_BIN=build/release/gpuadmit python3 tests/e2e/test_capacity.py
"""
import base64
import copy
import http.client
import json
import os
import ssl
import sys
import time
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, HERE)
import fake_apiserver  # noqa: E402
from common import make_certs, run_suite, SLOW, SERVICE_DNS, ServerProcess, check, t, tls_connect  # noqa: E402

BIN = os.path.abspath(os.environ.get("GPUADMIT_BIN", os.path.join(ROOT, "build/release/gpuadmit")))
STALL = os.path.join(ROOT, "tests/data/snapshots/stall.json")
# make run's view and its second curl: captured from a real control plane (make cluster-capture)
SEED000 = os.path.join(ROOT, "tests/data/snapshots/seed-000.json")
SEED000_REVIEW = os.path.join(ROOT, "tests/data/review-stall-replicaset.json")
DEFAULT_RULES = os.path.join(ROOT, "rules/default.yaml")
SUITE_LIMIT_S = 150 if SLOW else 90


class E:
    work = None


def rules_dir(name, available="Warn"):
    d = os.path.join(E.work, "rules-" + name)
    os.makedirs(d, exist_ok=True)
    with open(DEFAULT_RULES) as f:
        text = f.read()
    check("available: Warn" in text, "the default policy lost its capacity rule")
    with open(os.path.join(d, "default.yaml"), "w") as f:
        f.write(text.replace("available: Warn", "available: " + available))
    return d


class Server(ServerProcess):
    """One gpuadmit process. As a context manager it is always stopped on exit; on a clean exit
    of the block it must stop on SIGTERM with code 0, no sanitizer report and a log of JSON
    lines."""

    def __init__(self, rules, *extra, name="srv"):
        self.log_path = os.path.join(E.work, "%s-%d.log" % (name, time.monotonic_ns()))
        self.args = [BIN, "serve", "--listen", "127.0.0.1:0", "--tls-cert", E.crt, "--tls-key",
                     E.key, "--rules", rules, "--shutdown-grace", "5"] + list(extra)

    def __enter__(self):
        return self.launch()

    def __exit__(self, exc_type, exc, tb):
        rc = self.stop(t(10))
        if exc_type is None:
            self.check_clean_exit(rc)
        return False


class Conn(http.client.HTTPSConnection):
    def __init__(self, port):
        ctx = ssl.create_default_context(cafile=E.ca)
        super().__init__(SERVICE_DNS, port, context=ctx, timeout=t(10))

    def connect(self):
        self.sock = tls_connect(self.port, self._context, self.timeout, nodelay=False)


def review(obj, resource, op="CREATE", old=None, sub="", name="", ns="ml", dry_run=True):
    """dryRun, by default: an admitted increase that is not a dry run is reserved for a few
    seconds, and these checks are each about one decision."""
    group, _, res = resource.rpartition("/")
    req = {"uid": str(uuid.uuid4()), "kind": {"group": group, "version": "v1", "kind": "X"},
           "resource": {"group": group, "version": "v1", "resource": res}, "name": name,
           "namespace": ns, "operation": op, "userInfo": {"username": "alice"},
           "object": obj, "oldObject": old, "dryRun": dry_run}
    if sub:
        req["subResource"] = sub
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": req}


def validate(port, body, path="/validate"):
    c = Conn(port)
    try:
        c.request("POST", path, json.dumps(body).encode(),
                  {"Content-Type": "application/json"})
        r = c.getresponse()
        data = r.read()
        check(r.status == 200, "HTTP %d: %r" % (r.status, data[:300]))
        resp = json.loads(data)["response"]
        check(resp["uid"] == body["request"]["uid"], "uid not echoed")
        return resp
    finally:
        c.close()


TOL = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}


def template(cls):
    return {"metadata": {"labels": {"app": "trainer"}},
            "spec": {"priorityClassName": cls, "tolerations": [TOL],
                     "nodeSelector": {"nvidia.com/gpu.present": "true"},
                     "containers": [{"name": "trainer", "image": "trainer:1",
                                     "resources": {"limits": {"nvidia.com/gpu": "1"}}}]}}


def replicaset(n, cls):
    return {"apiVersion": "apps/v1", "kind": "ReplicaSet",
            "metadata": {"name": "stall", "namespace": "ml"},
            "spec": {"replicas": n, "selector": {"matchLabels": {"app": "trainer"}},
                     "template": template(cls)}}


def scale(name, before, after):
    def s(n):
        return {"apiVersion": "autoscaling/v1", "kind": "Scale",
                "metadata": {"name": name, "namespace": "ml"}, "spec": {"replicas": n},
                "status": {"replicas": before, "selector": "app=trainer"}}
    return review(s(after), "apps/deployments", "UPDATE", s(before), "scale", name)


def warnings_of(resp):
    return resp.get("warnings") or []


def apply_adds(doc, ops):
    """doc with a patch of "add" operations (all gpuadmit sends, webhook/patch.h) applied as
    RFC 6902 says: a missing parent fails, "-" appends, ~1 and ~0 unescape."""
    out = copy.deepcopy(doc)
    for op in ops:
        check(op["op"] == "add", "not an add: %r" % op)
        tokens = [x.replace("~1", "/").replace("~0", "~") for x in op["path"].split("/")[1:]]
        node = out
        for tok in tokens[:-1]:
            node = node[int(tok)] if isinstance(node, list) else node[tok]
        if isinstance(node, list):
            check(tokens[-1] == "-", "index %r" % tokens[-1])
            node.append(op["value"])
        else:
            node[tokens[-1]] = op["value"]
    return out


def mutated(port, body):
    """The object as the apiserver passes it on to validating webhooks: /mutate's patch
    applied (docs/protocol.md §6)."""
    r = validate(port, body, "/mutate")
    check(r["allowed"] is True, "/mutate refused %r" % r)
    obj = body["request"]["object"]
    return apply_adds(obj, json.loads(base64.b64decode(r["patch"]))) if r.get("patch") else obj


# ---------------------------------------------------------------------------------------------

TESTS = []


def test(fn):
    TESTS.append(fn)
    return fn


@test
def stall_default_policy_warns_that_4_fit_now():
    """5 nodes, 4 with 4 GPUs, 12 in use at priority 1000: 8 more one-GPU pods at the same
    priority are admitted with a warning that 4 fit now; with a preempting class they fit."""
    with Server(rules_dir("warn"), "--cluster-snapshot", STALL, name="warn") as srv:
        r = validate(srv.port, review(replicaset(8, "batch-low"), "apps/replicasets"))
        check(r["allowed"] is True, "8 replicas refused under the default policy: %r" % r)
        w = warnings_of(r)
        check(len(w) == 1 and "only 4 of 8 more pods fit now, the rest will wait Pending" in w[0],
              "warning %r" % w)
        check("8 more pods × 1 nvidia.com/gpu = 8 requested" in r["auditAnnotations"]["capacity"],
              "annotation %r" % r.get("auditAnnotations"))
        # a preempting class: they fit, by evicting 4 of the lower-priority pods, and it says so
        r = validate(srv.port, review(replicaset(8, "gpu-critical"), "apps/replicasets"))
        w = warnings_of(r)
        check(r["allowed"] is True and len(w) == 1 and "replicasets ml/stall fits only by "
              "preempting: its 8 pods take 4 nvidia.com/gpu from lower-priority pods, which will "
              "be evicted: 4 in namespace batch at priority 1000 (batch-low)" in w[0],
              "8 preempting replicas (12 lower-priority GPUs count): %r" % r)
        r = validate(srv.port, review(replicaset(4, "gpu-critical"), "apps/replicasets"))
        check(r["allowed"] is True and not warnings_of(r), "4 fit the free GPUs: %r" % r)
        r = validate(srv.port, review(replicaset(20, "gpu-critical"), "apps/replicasets"))
        check(r["allowed"] is False, "20 replicas on 16 GPUs admitted: %r" % r)
        msg = r["status"]["message"]
        check("can never fit: 20 pods at once, at most 16 fit the eligible nodes" in msg and
              "4 eligible nodes" in msg and "not eligible: 1 node has no nvidia.com/gpu"
              in msg, "message %r" % msg)
        check(r["status"]["code"] == 403, "status %r" % r["status"])
        # kubectl scale on the cached Deployment (2 replicas, class batch-low) to 10: 8 more
        r = validate(srv.port, scale("trainer", 2, 10))
        check(r["allowed"] is True and any("only 4 of 8 more pods fit now" in x
                                           for x in warnings_of(r)), "scale 2 -> 10: %r" % r)
        r = validate(srv.port, scale("trainer-critical", 2, 10))
        w = warnings_of(r)
        check(r["allowed"] is True and len(w) == 1 and "deployments ml/trainer-critical (scale) "
              "fits only by preempting: its 8 more pods take 4 nvidia.com/gpu" in w[0],
              "preempting scale 2 -> 10: %r" % r)
        r = validate(srv.port, scale("trainer", 2, 20))
        check(r["allowed"] is False and "can never fit: 20 pods at once" in r["status"]["message"],
              "scale 2 -> 20: %r" % r)
        r = validate(srv.port, scale("trainer", 10, 2))
        check(r["allowed"] is True and not warnings_of(r), "scale down: %r" % r)


@test
def make_run_answers_the_captured_benchmark_with_the_capacity_warning():
    """make run's second curl: the AdmissionReview kube-apiserver sent for the seed's 8-replica
    ReplicaSet, against the snapshot that apiserver listed (12 of 16 GPUs bound). kube-scheduler
    bound 4 of such 8 and left 4 "Insufficient nvidia.com/gpu" (make cluster-test, scenario a):
    the warning says the same."""
    with open(SEED000_REVIEW) as f:
        body = json.load(f)
    with Server(rules_dir("warn"), "--cluster-snapshot", SEED000, name="seed000") as srv:
        r = validate(srv.port, body)
        check(r["uid"] == body["request"]["uid"] and r["allowed"] is True, "answer %r" % r)
        w = warnings_of(r)
        check(len(w) == 1 and "replicasets ml/stall: only 4 of 8 more pods fit now, the rest "
              "will wait Pending" in w[0], "warnings %r" % w)


@test
def seed000_replicaset_without_a_class_is_told_whom_it_preempts():
    """Seed 000's ReplicaSet as a user writes it, 8 one-GPU pods and no class, under the default
    policy: judged as its pods get gpu-standard (100000), it fits only by evicting 4 of the 12
    pods of ml at batch-low (1000), and the warning says so, over TLS as kubectl gets it."""
    rs = bare_replicaset(8, "")
    del rs["spec"]["template"]["spec"]["priorityClassName"]
    rs["metadata"]["name"] = "benchmark-rs"
    with Server(rules_dir("warn"), "--cluster-snapshot", SEED000, name="preempt") as srv:
        body = review(rs, "apps/replicasets")
        body["request"]["object"] = mutated(srv.port, body)
        check(body["request"]["object"]["spec"]["template"]["spec"]["priorityClassName"] ==
              "gpu-standard", "not patched to gpu-standard: %r" % body["request"]["object"])
        r = validate(srv.port, body)
        w = warnings_of(r)
        check(r["allowed"] is True and len(w) == 1 and w[0] == "gpuadmit [capacity]: "
              "replicasets ml/benchmark-rs fits only by preempting: its 8 pods take 4 "
              "nvidia.com/gpu from lower-priority pods, which will be evicted: 4 in namespace ml "
              "at priority 1000 (batch-low)", "warnings %r" % w)
        check("fits only by preempting" in r["auditAnnotations"]["capacity"],
              "annotation %r" % r.get("auditAnnotations"))


@test
def stall_deny_setting_refuses_past_what_fits_now():
    with Server(rules_dir("deny", "Deny"), "--cluster-snapshot", STALL, name="deny") as srv:
        r = validate(srv.port, review(replicaset(8, "batch-low"), "apps/replicasets"))
        check(r["allowed"] is False, "8 replicas admitted with available: Deny: %r" % r)
        check("only 4 of 8 more pods fit now" in r["status"]["message"], "message %r" % r)
        r = validate(srv.port, review(replicaset(8, "gpu-critical"), "apps/replicasets"))
        check(r["allowed"] is True, "8 preempting replicas refused: %r" % r)
        r = validate(srv.port, review(replicaset(20, "gpu-critical"), "apps/replicasets"))
        check(r["allowed"] is False and "can never fit" in r["status"]["message"], "%r" % r)
        r = validate(srv.port, scale("trainer", 2, 10))
        check(r["allowed"] is False and "deployments ml/trainer (scale)" in r["status"]["message"]
              and "only 4 of 8 more pods fit now" in r["status"]["message"], "scale: %r" % r)
        r = validate(srv.port, scale("trainer-critical", 2, 10))
        check(r["allowed"] is True, "preempting scale refused: %r" % r)


def bare_replicaset(n, cls):
    """replicaset(n, cls) as a user writes it: no toleration of the GPU taint, no GPU node
    label; the default policy's tolerations and node-selector rules (Mutate) add them."""
    rs = replicaset(n, cls)
    del rs["spec"]["template"]["spec"]["tolerations"]
    del rs["spec"]["template"]["spec"]["nodeSelector"]
    return rs


@test
def audit_only_capacity_judges_what_enforcing_would_admit():
    """--audit-only: /validate sees the ReplicaSet as the user wrote it, since no mutating
    webhook patched it. Its capacity finding must be the one enforcing gives for the patched
    object at /validate (kube-scheduler puts pods with the toleration on the tainted GPU nodes,
    and 4 of the 16 GPUs of stall.json are free at batch-low's priority), never "untolerated
    taint", which no enforcing webhook would have left. 20 preempting pods never fit the 16
    GPUs, patched or not, and audit-only still records that."""
    rules = rules_dir("deny", "Deny")
    with Server(rules, "--cluster-snapshot", STALL, name="enforce") as enf, \
            Server(rules, "--cluster-snapshot", STALL, "--audit-only", name="audit") as aud:
        for n, cls, want in ((4, "batch-low", None),
                             (8, "batch-low", "replicasets ml/stall: only 4 of 8 more pods fit "
                              "now, the rest will wait Pending"),
                             (20, "gpu-critical", "replicasets ml/stall can never fit: 20 pods "
                              "at once, at most 16 fit the eligible nodes")):
            what = "%d replicas at %s" % (n, cls)
            body = review(bare_replicaset(n, cls), "apps/replicasets")
            patched = mutated(enf.port, body)
            check(patched["spec"]["template"]["spec"].get("tolerations") == [TOL],
                  "%s: enforcing patched %r" % (what, patched))
            e = validate(enf.port, review(patched, "apps/replicasets"))
            a = validate(aud.port, body)
            m = validate(aud.port, body, "/mutate")
            check(a["allowed"] is True and not warnings_of(a) and m["allowed"] is True and
                  not m.get("patch"), "%s: audit-only denied, patched or warned: %r %r"
                  % (what, a, m))
            ann = (a.get("auditAnnotations") or {}).get("capacity")
            check("untolerated taint" not in json.dumps(a),
                  "%s: audit-only judged the unpatched template: %r" % (what, a))
            if want is None:
                check(e["allowed"] is True and not warnings_of(e), "%s: enforcing %r" % (what, e))
                check(ann is None, "%s: enforcing admits it, audit-only records %r" % (what, ann))
                continue
            check(e["allowed"] is False and want in e["status"]["message"],
                  "%s: enforcing %r" % (what, e))
            check(ann is not None and ann.startswith("would deny: " + want),
                  "%s: audit-only records %r" % (what, ann))
            # the same arithmetic, word for word, as the enforcing denial
            check(ann[len("would deny: "):] in e["status"]["message"],
                  "%s: enforcing says %r, audit-only %r" % (what, e["status"]["message"], ann))


@test
def serve_logs_a_snapshot_without_priority_classes():
    """gpuadmit serve --cluster-snapshot of a snapshot listed without priorityclasses (every
    cluster has some: kube-apiserver creates the system classes at start): one warning in the
    log at load naming what is missing and which rules read it, and the class denial of a
    ReplicaSet at batch-low (a class stall.json has) says why."""
    snap = os.path.join(E.work, "stall-without-classes.json")
    with open(STALL) as f:
        doc = json.load(f)
    doc["items"] = [o for o in doc["items"] if o["kind"] != "PriorityClass"]
    with open(snap, "w") as f:
        json.dump(doc, f)
    with Server(rules_dir("warn"), "--cluster-snapshot", snap, name="noclass") as srv:
        told = [ev for ev in srv.events() if ev.get("msg") == "cluster snapshot incomplete"]
        check(len(told) == 1 and told[0].get("level") == "warn" and
              told[0].get("source") == snap and told[0].get("missing") ==
              "no PriorityClasses (read by the priority-class and capacity rules)",
              "log lines %r" % told)
        r = validate(srv.port, review(replicaset(4, "batch-low"), "apps/replicasets"))
        check(r["allowed"] is False and "priorityClassName \"batch-low\" is not a known "
              "PriorityClass (the cluster view is a snapshot without PriorityClasses"
              in r["status"]["message"], "answer %r" % r)
    with Server(rules_dir("warn"), "--cluster-snapshot", STALL, name="classes") as srv:
        check(not [ev for ev in srv.events() if ev.get("msg") == "cluster snapshot incomplete"],
              "a warning about the whole snapshot")


def stall_objects():
    with open(STALL) as f:
        items = json.load(f)["items"]
    by = {}
    for o in items:
        by.setdefault(o["kind"], []).append(o)
    return by


@test
def device_plugin_restart_within_the_grace():
    """Watched through a (simulated) API server: a node's allocatable drops to 0 while its
    capacity stays (the device plugin re-registering). Within the grace nothing changes; a
    server with a 1 s grace sees the loss once the grace is over."""
    fake = fake_apiserver.FakeAPIServer(E.crt, E.key, token="t0k3n")
    fake.start()
    try:
        by = stall_objects()
        kinds = {"Node": "nodes", "Pod": "pods", "PriorityClass": "priorityclasses",
                 "Deployment": "deployments"}
        for k, plural in kinds.items():
            fake.put_many(plural, by.get(k, []))
        kcfg = fake.kubeconfig(os.path.join(E.work, "kubeconfig"), ca_file=E.ca, token="t0k3n")
        rs4 = review(replicaset(4, "batch-low"), "apps/replicasets")
        with Server(rules_dir("warn"), "--kubeconfig", kcfg, name="grace") as srv, \
                Server(rules_dir("deny", "Deny"), "--kubeconfig", kcfg, "--allocatable-grace",
                       "1", name="nograce") as short:
            for s in (srv, short):
                deadline = time.monotonic() + t(10)
                while time.monotonic() < deadline:
                    c = Conn(s.port)
                    c.request("GET", "/readyz")
                    st = c.getresponse().status
                    c.close()
                    if st == 200:
                        break
                    time.sleep(0.1)
                check(st == 200, "not ready after the first sync: %d" % st)
            for s in (srv, short):
                r = validate(s.port, rs4)
                check(r["allowed"] is True and not warnings_of(r), "4 of 4 free refused: %r" % r)
            # gpu-0's device plugin restarts: allocatable 0, capacity 4
            node = copy.deepcopy([n for n in by["Node"] if n["metadata"]["name"] == "gpu-0"][0])
            node["status"]["allocatable"]["nvidia.com/gpu"] = "0"
            fake.put("nodes", node)
            time.sleep(1.5 if not SLOW else 3)  # past the short grace, well within the default
            r = validate(srv.port, rs4)
            check(r["allowed"] is True and not warnings_of(r),
                  "a device-plugin restart changed the decision within the grace: %r" % r)
            r = validate(short.port, rs4)
            check(r["allowed"] is False and "only 3 of 4 more pods fit now" in
                  r["status"]["message"], "past a 1 s grace the node's GPUs are gone: %r" % r)
            # the plugin is back
            node["status"]["allocatable"]["nvidia.com/gpu"] = "4"
            fake.put("nodes", node)
            deadline = time.monotonic() + t(5)
            while time.monotonic() < deadline:
                r = validate(short.port, rs4)
                if r["allowed"]:
                    break
                time.sleep(0.1)
            check(r["allowed"] is True, "the node's GPUs did not come back: %r" % r)
    finally:
        fake.stop()


@test
def a_burst_cannot_overcommit():
    """Admitted increases are reserved for a while: two ReplicaSets of 4 arriving together do
    not both count the same 4 free GPUs."""
    with Server(rules_dir("deny", "Deny"), "--cluster-snapshot", STALL, name="burst") as srv:
        first = validate(srv.port, review(replicaset(4, "batch-low"), "apps/replicasets",
                                          dry_run=False))
        check(first["allowed"] is True and not warnings_of(first), "first 4: %r" % first)
        second = review(replicaset(4, "batch-low"), "apps/replicasets", dry_run=False)
        second["request"]["object"]["metadata"]["name"] = "stall-2"
        r = validate(srv.port, second)
        check(r["allowed"] is False and "only 0 of 4 more pods fit now" in r["status"]["message"],
              "second 4 in the same burst: %r" % r)



@test
def a_retried_create_is_not_charged_its_own_reservation():
    """A client retry (a timeout, a GitOps resync) sends the same CREATE again: it replaces its
    own reservation instead of finding its 4 GPUs taken; another workload still finds them."""
    with Server(rules_dir("deny", "Deny"), "--cluster-snapshot", STALL, name="retry") as srv:
        for attempt in range(2):
            r = validate(srv.port, review(replicaset(4, "batch-low"), "apps/replicasets",
                                          dry_run=False))
            check(r["allowed"] is True and not warnings_of(r), "attempt %d: %r" % (attempt, r))
        other = review(replicaset(1, "batch-low"), "apps/replicasets", dry_run=False)
        other["request"]["object"]["metadata"]["name"] = "stall-2"
        r = validate(srv.port, other)
        check(r["allowed"] is False and "only 0 of 1 more pods fit now" in r["status"]["message"],
              "another workload: %r" % r)

# ---------------------------------------------------------------------------------------------


SNAPS = os.path.join(ROOT, "tests/data/snapshots")
CA_GROUP = "eks-gpu-3ec8e5b6-24f7-8d73-4f5e-aa6e0c3f8d11"


def deployment(name, n):
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": name, "namespace": "ml"},
            "spec": {"replicas": n, "selector": {"matchLabels": {"app": "trainer"}},
                     "template": template("gpu-standard")}}


def ca_updated(ago_s):
    """Cluster Autoscaler's last-updated annotation, ago_s seconds ago (Go's time.Time.String(),
    cluster-autoscaler utils/status: ConfigMapLastUpdateFormat)."""
    return time.strftime("%Y-%m-%d %H:%M:%S.000000000 +0000 UTC", time.gmtime(time.time() - ago_s))


@test
def autoscalers_judged_from_a_watched_status():
    """Cluster Autoscaler's status ConfigMap, watched through a (simulated) API server, decides
    what may be added past the nodes there are: at its max size the group adds nothing and 10
    replicas on 8 GPUs are refused naming it; with room to grow they are admitted, even under
    available: Deny, naming how much it grows; in backoff they wait, and the warning says why
    (refused under available: Deny); a status CA stopped writing 20 minutes ago counts for
    nothing, as without an autoscaler."""
    with open(os.path.join(SNAPS, "eks-at-max.json")) as f:
        items = json.load(f)["items"]
    cm = [o for o in items if o["kind"] == "ConfigMap"][0]
    at_max = cm["data"]["status"]
    check("maxSize: 2" in at_max and "NoActivity" in at_max, "eks-at-max.json changed")
    kinds = {"Node": "nodes", "Pod": "pods", "PriorityClass": "priorityclasses",
             "ReplicaSet": "replicasets"}
    fake = fake_apiserver.FakeAPIServer(E.crt, E.key, token="t0k3n", optional=("configmaps",))
    fake.start()
    try:
        for k, plural in kinds.items():
            fake.put_many(plural, [o for o in items if o["kind"] == k])

        def status(text, ago_s=5):
            o = copy.deepcopy(cm)
            o["data"]["status"] = text
            o["metadata"]["annotations"] = {
                "cluster-autoscaler.kubernetes.io/last-updated": ca_updated(ago_s)}
            fake.put("configmaps", o)
        status(at_max)
        kcfg = fake.kubeconfig(os.path.join(E.work, "kubeconfig-ca"), ca_file=E.ca, token="t0k3n")
        d10 = review(deployment("train", 10), "apps/deployments")
        with Server(rules_dir("warn"), "--kubeconfig", kcfg, name="ca") as srv, \
                Server(rules_dir("deny", "Deny"), "--kubeconfig", kcfg, name="ca-deny") as deny:
            def answer(s, want):
                """The answer once the view shows the status: the first that has want."""
                deadline = time.monotonic() + t(10)
                r = None
                while time.monotonic() < deadline:
                    c = Conn(s.port)
                    c.request("GET", "/readyz")
                    ready = c.getresponse().status == 200
                    c.close()
                    if ready:
                        r = validate(s.port, d10)
                        if want in json.dumps(r):
                            return r
                    time.sleep(0.1)
                check(False, "no answer with %r: %r" % (want, r))
            for s in (srv, deny):
                r = answer(s, "is at its max size")
                check(r["allowed"] is False and "deployments ml/train can never fit: 10 pods at "
                      "once, at most 8 fit (8 on the eligible nodes, none on new ones): node "
                      "group %s is at its max size (2 of maxSize 2): Cluster Autoscaler adds no "
                      "node to it (max node group size reached)" % CA_GROUP
                      in r["status"]["message"], "at its max: %r" % r)
            status(at_max.replace("maxSize: 2", "maxSize: 6"))
            for s in (srv, deny):
                r = answer(s, "fits after scale-up")
                w = warnings_of(r)
                # the growth first: it is what the 256 characters of a warning keep
                check(r["allowed"] is True and len(w) == 1 and w[0].startswith(
                    "gpuadmit [capacity]: deployments ml/train fits after scale-up: node group %s "
                    "adds 3 nodes of 4 pods each (2 to 5 of maxSize 6); 0 of its 10 more pods fit "
                    "now" % CA_GROUP), "room to grow: %r" % r)
                check("the other 10 wait Pending until the nodes come, after the 2 pods already "
                      "waiting for them" in r["auditAnnotations"]["capacity"],
                      "annotation %r" % r)
            status(at_max.replace("maxSize: 2", "maxSize: 6").replace(
                '    scaleUp:\n      status: "NoActivity"',
                '    scaleUp:\n      status: "Backoff"\n      backoffInfo:\n'
                '        errorCode: "InsufficientInstanceCapacity"\n'
                '        errorMessage: "We currently do not have sufficient g5.12xlarge capacity"'))
            r = answer(srv, "in backoff")
            w = warnings_of(r)
            check(r["allowed"] is True and any(
                "node group %s is in backoff after a failed scale-up (InsufficientInstanceCapacity:"
                " We currently do not have sufficient g5.12xlarge capacity): Cluster Autoscaler "
                "adds no node to it until the backoff ends" % CA_GROUP in x
                for x in r["auditAnnotations"].values()) and len(w) >= 2,
                "backoff: %r" % r)
            r = answer(deny, "in backoff")
            check(r["allowed"] is False and "only 0 of 10 more pods fit now, and the node "
                  "autoscalers may add room for 0 more now" in r["status"]["message"],
                  "backoff under available: Deny: %r" % r)
            # CA stopped 20 minutes ago: its groups count for nothing, as without it
            status(at_max.replace("maxSize: 2", "maxSize: 6"), ago_s=1200)
            r = answer(srv, "last updated 20 minutes ago")
            check(r["allowed"] is False and "can never fit: 10 pods at once, at most 8 fit the "
                  "eligible nodes" in r["status"]["message"] and "Cluster Autoscaler is not "
                  "running, and its node groups are not counted" in r["status"]["message"],
                  "stale status: %r" % r)
    finally:
        fake.stop()


@test
def karpenter_nodepool_limit_from_a_snapshot():
    """A NodePool with 8 of its 12 nvidia.com/gpu left and 4-GPU instance types: 8 more one-GPU
    pods fit after Karpenter launches 2 nodes; 13 in all are past the limit and refused."""
    snap = os.path.join(SNAPS, "karpenter-limit.json")
    with Server(rules_dir("warn"), "--cluster-snapshot", snap, name="karpenter") as srv:
        r = validate(srv.port, review(deployment("train", 8), "apps/deployments"))
        check(r["allowed"] is True and "NodePool gpu launches 2 nodes of 4 pods each (8 "
              "nvidia.com/gpu left of its limit of 12)" in r["auditAnnotations"]["capacity"],
              "8 after scale-up: %r" % r)
        r = validate(srv.port, review(deployment("train", 13), "apps/deployments"))
        check(r["allowed"] is False and "at most 12 fit (4 on the eligible nodes" in
              r["status"]["message"] and "NodePool gpu may launch 2 nodes" in
              r["status"]["message"], "13 past the limit: %r" % r)


def setup(work):
    E.work = work
    E.ca, E.crt, E.key = make_certs(os.path.join(work, "pki"))


def main():
    return run_suite("e2e-capacity", TESTS, SUITE_LIMIT_S, setup)


if __name__ == "__main__":
    sys.exit(main())
