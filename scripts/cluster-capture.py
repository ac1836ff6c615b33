#!/usr/bin/env python3
"""make cluster-capture: test data captured from the local control plane (scripts/cluster.sh),
so that it is what a real kube-apiserver sends, not what someone wrote by hand.

  tests/data/snapshots/idle.json      node pool seed-000, PriorityClasses batch-low (1000),
                                      gpu-standard (the manifests') and gpu-critical (1000000),
                                      no GPU pod
  tests/data/snapshots/seed-000.json  the same with the 12-pod "busy" ReplicaSet of the README's
                                      "What to try" bound by kube-scheduler: 4 of 16 GPUs free
  tests/data/review-stall-replicaset.json
                                      the AdmissionReview kube-apiserver sends to a validating
                                      webhook for the seed's 8-replica benchmark ReplicaSet
  tests/data/snapshots/seed-000-pending.json
                                      seed-000.json's cluster plus the seed's benchmark as its
                                      user wrote it, ml/benchmark-rs: 8 one-GPU pods, no
                                      priorityClassName (priority 0), the GPU taint's toleration
                                      and the GPU nodes' nodeSelector of its own, never seen by
                                      gpuadmit; kube-scheduler has bound 4 (one a node) and
                                      marked the other 4 PodScheduled=False, Unschedulable

Snapshots are `kubectl get nodes,pods,priorityclasses,replicasets,deployments,statefulsets,jobs
-A -o json`, the input of `gpuadmit serve --cluster-snapshot`, as kubectl prints it. The
review is recorded by a webhook of this script's own (a ValidatingWebhookConfiguration pointing at
a listener here, on CLUSTER_PORT_BASE + 945), for a real create of the ReplicaSet, which is
deleted afterwards. For seed-000-pending.json gpuadmit's webhook configurations are removed
(scripts/cluster.sh uninstall) until kube-apiserver no longer calls gpuadmit (its request
counter stays still across server-side dry runs of the benchmark and of one of its pods), and
installed again after the listing; the counter must not move while the benchmark is created
and its pods are made and scheduled. Brings the cluster up (make cluster) if it is not (make
cluster-capture stops it afterwards).

  scripts/cluster-capture.py              all four files
  scripts/cluster-capture.py FILE...      only these (paths as above, or their base names);
                                          the cluster is built up to them all the same
                                          (make cluster-capture CAPTURE="FILE...")

Prints each file it wrote, the PodScheduled messages of the benchmark's Pending pods, and the
Kubernetes version it captured from. Python 3 standard library only.
"""
import base64
import http.server
import json
import os
import ssl
import subprocess
import sys
import threading
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CLUSTER = os.path.join(ROOT, "scripts", "cluster.sh")
STATE = os.path.join(ROOT, "build", "cluster")
BASE = int(os.environ.get("CLUSTER_PORT_BASE", "26000"))
ENV = dict(os.environ, KUBECONFIG=os.path.join(STATE, "admin.kubeconfig"),
           NO_PROXY="127.0.0.1,localhost", no_proxy="127.0.0.1,localhost")
KINDS = "nodes,pods,priorityclasses,replicasets,deployments,statefulsets,jobs"
OUT_IDLE = os.path.join("tests", "data", "snapshots", "idle.json")
OUT_SEED = os.path.join("tests", "data", "snapshots", "seed-000.json")
OUT_REVIEW = os.path.join("tests", "data", "review-stall-replicaset.json")
OUT_PENDING = os.path.join("tests", "data", "snapshots", "seed-000-pending.json")
OUTPUTS = (OUT_IDLE, OUT_SEED, OUT_REVIEW, OUT_PENDING)
KUBECTL = None


def die(msg):
    sys.stderr.write("cluster-capture: %s\n" % msg)
    sys.exit(1)


def kubectl(*args, stdin=None, ok=True):
    p = subprocess.run([KUBECTL, *args], input=stdin, capture_output=True, text=True, env=ENV,
                       timeout=120)
    if ok and p.returncode != 0:
        die("kubectl %s: exit %d: %s" % (" ".join(args), p.returncode, p.stderr.strip()))
    return p


def wait(what, fn, limit=60):
    end = time.time() + limit
    while time.time() < end:
        got = fn()
        if got:
            return got
        time.sleep(0.5)
    die("%s: not after %d s" % (what, limit))


def replicaset(name, replicas):
    """The README's gpu_rs: 1-GPU pods at batch-low, no toleration (gpuadmit patches it in)."""
    return json.dumps({
        "apiVersion": "apps/v1", "kind": "ReplicaSet",
        "metadata": {"name": name, "namespace": "ml"},
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                 "template": {"metadata": {"labels": {"app": name}},
                              "spec": {"priorityClassName": "batch-low",
                                       "containers": [{"name": "c", "image": "trainer:1",
                                                       "resources": {"limits": {
                                                           "nvidia.com/gpu": "1"}}}]}}}})


def benchmark(dry_pod=False):
    """The seed 000 benchmark as its user writes it, without gpuadmit: 1-GPU pods, no
    priorityClassName, the toleration of the GPU nodes' taint (nvidia.com/gpu=true:NoSchedule)
    and their label as nodeSelector (tests/cluster/nodes/seed-000.yaml). dry_pod: one of its
    pods alone, for the dry runs that show whether gpuadmit is still called."""
    template = {"metadata": {"labels": {"app": "benchmark-rs"}},
                "spec": {"tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists",
                                          "effect": "NoSchedule"}],
                         "nodeSelector": {"nvidia.com/gpu.present": "true"},
                         "containers": [{"name": "c", "image": "trainer:1",
                                         "resources": {"limits": {"nvidia.com/gpu": "1"}}}]}}
    if dry_pod:
        return json.dumps(dict(template, apiVersion="v1", kind="Pod", metadata={
            "name": "benchmark-rs-probe", "namespace": "ml", "labels": {"app": "benchmark-rs"}}))
    return json.dumps({
        "apiVersion": "apps/v1", "kind": "ReplicaSet",
        "metadata": {"name": "benchmark-rs", "namespace": "ml"},
        "spec": {"replicas": 8, "selector": {"matchLabels": {"app": "benchmark-rs"}},
                 "template": template}})


def pods(selector):
    return json.loads(kubectl("-n", "ml", "get", "pods", "-l", selector, "-o",
                              "json").stdout)["items"]


def write(path, obj):
    with open(os.path.join(ROOT, path) + ".tmp", "w") as f:
        json.dump(obj, f, indent=2)
        f.write("\n")
    os.replace(os.path.join(ROOT, path) + ".tmp", os.path.join(ROOT, path))
    print("wrote %s" % path)


def snapshot(path):
    write(path, json.loads(kubectl("get", KINDS, "-A", "-o", "json").stdout))


def capture_review():
    """The AdmissionReview of a real create of the 8-replica ReplicaSet "stall", as kube-apiserver
    sends it to a validating webhook (after the mutating ones, gpuadmit's included)."""
    seen = []

    class Hook(http.server.BaseHTTPRequestHandler):
        def do_POST(self):
            body = self.rfile.read(int(self.headers["Content-Length"]))
            review = json.loads(body)
            seen.append(review)
            out = json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                              "response": {"uid": review["request"]["uid"],
                                           "allowed": True}}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(out)))
            self.end_headers()
            self.wfile.write(out)

        def log_message(self, *args):
            pass

    port = BASE + 945
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", port), Hook)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    # gpuadmit's serving certificate of the cluster (IP SAN 127.0.0.1) and its CA
    ctx.load_cert_chain(os.path.join(STATE, "webhook", "tls.crt"),
                        os.path.join(STATE, "webhook", "tls.key"))
    srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    with open(os.path.join(STATE, "webhook", "ca.crt"), "rb") as f:
        ca = base64.b64encode(f.read()).decode()
    vwc = {"apiVersion": "admissionregistration.k8s.io/v1",
           "kind": "ValidatingWebhookConfiguration", "metadata": {"name": "cluster-capture"},
           "webhooks": [{"name": "capture.cluster.gpuadmit.test",
                         "clientConfig": {"url": "https://127.0.0.1:%d/capture" % port,
                                          "caBundle": ca},
                         "rules": [{"apiGroups": ["apps"], "apiVersions": ["v1"],
                                    "operations": ["CREATE"], "resources": ["replicasets"]}],
                         "namespaceSelector": {"matchLabels": {
                             "kubernetes.io/metadata.name": "ml"}},
                         "matchConditions": [{"name": "stall",
                                              "expression": "object.metadata.name == 'stall'"}],
                         "failurePolicy": "Fail", "sideEffects": "None",
                         "admissionReviewVersions": ["v1"], "timeoutSeconds": 10}]}
    kubectl("apply", "-f", "-", stdin=json.dumps(vwc))
    try:
        # the apiserver learns of the configuration through an informer: dry runs until called
        wait("the capture webhook called", lambda: kubectl(
            "create", "--dry-run=server", "-f", "-", stdin=replicaset("stall", 8),
            ok=False).returncode == 0 and seen, limit=30)
        del seen[:]
        p = kubectl("create", "-f", "-", stdin=replicaset("stall", 8))
        if "only 4 of 8 more pods fit now" not in p.stderr:
            die("kubectl create of stall: no capacity warning from gpuadmit: %r" % p.stderr)
        reviews = [r for r in seen if not r["request"].get("dryRun")]
        if len(reviews) != 1:
            die("%d reviews of the create of stall" % len(reviews))
        write(OUT_REVIEW, reviews[0])
    finally:
        kubectl("delete", "validatingwebhookconfiguration", "cluster-capture",
                "--ignore-not-found")
        kubectl("-n", "ml", "delete", "rs", "stall", "--ignore-not-found", "--wait=true")
        kubectl("-n", "ml", "delete", "pods", "-l", "app=stall", "--ignore-not-found",
                "--grace-period=0", "--force")
        srv.shutdown()


def gpuadmit_requests():
    """gpuadmit's gpuadmit_admission_requests_total, all endpoints and kinds together."""
    ctx = ssl.create_default_context(cafile=os.path.join(STATE, "webhook", "ca.crt"))
    with urllib.request.urlopen("https://127.0.0.1:%d/metrics" % (BASE + 944), context=ctx,
                                timeout=5) as r:
        text = r.read().decode()
    return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
               if line.startswith("gpuadmit_admission_requests_total"))


def unschedulable(p):
    for c in p.get("status", {}).get("conditions", []):
        if c["type"] == "PodScheduled" and c["status"] == "False" and \
                c.get("reason") == "Unschedulable":
            return c.get("message") or None
    return None


def capture_pending():
    """seed-000.json's cluster plus the benchmark ReplicaSet ml/benchmark-rs as written, which
    gpuadmit neither patches nor judges, once kube-scheduler has decided on all 8 pods."""
    # the review's ReplicaSet stall is gone, and its 4 bound pods with it: 4 GPUs free again
    wait("no stall pod left", lambda: not pods("app=stall"))
    # Removed rather than skipped by the opt-out label gpuadmit.io/exempt=true: that label is
    # the webhooks' objectSelector, on the object (there is no exempt namespace label), so it
    # would have to be on the ReplicaSet and its pods, and the snapshot would no longer hold the
    # benchmark as it is written.
    if subprocess.run([CLUSTER, "uninstall"], env=ENV).returncode != 0:
        die("scripts/cluster.sh uninstall failed")
    try:
        # the apiserver drops the configurations through its informers: dry runs until a
        # create of the ReplicaSet and of one of its pods no longer reaches gpuadmit
        def still():
            n = gpuadmit_requests()
            # (ok=False: with the mutating configuration gone first, the validating one refuses
            # the pod without a priorityClassName)
            kubectl("create", "--dry-run=server", "-f", "-", stdin=benchmark(), ok=False)
            kubectl("create", "--dry-run=server", "-f", "-", stdin=benchmark(dry_pod=True),
                    ok=False)
            return gpuadmit_requests() == n
        wait("kube-apiserver no longer calling gpuadmit", still, limit=30)
        before = gpuadmit_requests()
        p = kubectl("create", "-f", "-", stdin=benchmark())
        if "Warning" in p.stderr:
            die("kubectl create of benchmark-rs: %r" % p.stderr)

        def decided():
            ps = pods("app=benchmark-rs")
            bound = [q for q in ps if q["spec"].get("nodeName")]
            waiting = [q for q in ps if not q["spec"].get("nodeName") and unschedulable(q)]
            return (len(ps) == 8 and len(bound) == 4 and len(waiting) == 4) and waiting
        waiting = wait("benchmark-rs: 4 pods bound, 4 Unschedulable", decided)
        if gpuadmit_requests() != before:
            die("gpuadmit was called for benchmark-rs (%g requests, %g before)"
                % (gpuadmit_requests(), before))
        snapshot(OUT_PENDING)
        for m in sorted({unschedulable(q) for q in waiting}):
            print("PodScheduled=False Unschedulable: %s" % m)
    finally:
        if subprocess.run([CLUSTER, "install", "enforce"], env=ENV).returncode != 0:
            die("scripts/cluster.sh install enforce failed")


def main():
    global KUBECTL
    os.chdir(ROOT)
    want = set()
    for a in sys.argv[1:]:
        got = [o for o in OUTPUTS if a in (o, os.path.basename(o))]
        if not got:
            die("%s: not one of %s" % (a, ", ".join(OUTPUTS)))
        want.update(got)
    want = want or set(OUTPUTS)
    r = subprocess.run([os.path.join(ROOT, "scripts", "k8s-binaries.sh")], stdout=subprocess.PIPE,
                       text=True)
    if r.returncode != 0:
        die("scripts/k8s-binaries.sh: exit %d" % r.returncode)
    KUBECTL = os.path.join(r.stdout.strip(), "kubectl")
    if subprocess.run([CLUSTER, "up"], env=ENV, stdout=subprocess.DEVNULL).returncode != 0:
        die("scripts/cluster.sh up failed")
    # the README's "What to try", from a cluster that has not been tried yet
    if kubectl("get", "namespace", "ml", ok=False).returncode == 0:
        die("namespace ml exists: capture from a fresh make cluster (make cluster-down, "
            "rm -rf build/cluster)")
    kubectl("create", "namespace", "ml")
    wait("ServiceAccount ml/default",
         lambda: kubectl("-n", "ml", "get", "serviceaccount", "default", ok=False).returncode == 0)
    # the README's batch-low, and the high class the cluster test preempts with
    kubectl("create", "priorityclass", "batch-low", "--value=1000")
    kubectl("create", "priorityclass", "gpu-critical", "--value=1000000")
    if OUT_IDLE in want:
        snapshot(OUT_IDLE)
    kubectl("create", "-f", "-", stdin=replicaset("busy", 12))
    wait("12 busy pods bound", lambda: sum(1 for p in pods("app=busy")
                                           if p["spec"].get("nodeName")) == 12)
    if OUT_SEED in want:
        snapshot(OUT_SEED)
    if OUT_REVIEW in want:
        capture_review()
    if OUT_PENDING in want:
        capture_pending()
    print("from Kubernetes %s" % json.loads(kubectl("version", "-o", "json").stdout)[
        "serverVersion"]["gitVersion"])


if __name__ == "__main__":
    main()
