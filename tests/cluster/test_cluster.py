#!/usr/bin/env python3
"""make cluster-test: gpuadmit on a real control plane (scripts/cluster.sh), from a cold start.

Every scenario asserts on what the apiserver, kube-scheduler and kubectl say: events, pod
conditions, kubectl's stderr, the audit log. No kubelet runs, so bound pods stay Pending; the
cluster view counts bound, non-terminal pods, which is all capacity needs.

Ends with the line "N passed, M failed". KEEP_CLUSTER=1 leaves the control plane running.
CLUSTER_TESTS="test_a_install_enforce test_c_mixed_pools" runs only the scenarios named (in
their order here; most need the install first), while a change is being written.
Python 3 standard library only.
"""
import base64
import json
import os
import re
import shutil
import signal
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import urllib.error
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CLUSTER = os.path.join(ROOT, "scripts", "cluster.sh")
STATE = os.path.join(ROOT, "build", "cluster")
KUBECONFIG = os.path.join(STATE, "admin.kubeconfig")
BASE = int(os.environ.get("CLUSTER_PORT_BASE", "26000"))
GPUADMIT = "https://127.0.0.1:%d" % (BASE + 944)
LIMIT_S = 900
ETCD = "http://127.0.0.1:%d" % (BASE + 379)
# kube-apiserver's --etcd-compaction-interval (scripts/cluster.sh): every 10 s it compacts etcd
# to the revision it saw 10 s before (k8s.io/apiserver pkg/storage/etcd3/compact.go), so that
# scenario e meets revisions etcd no longer has
# helm's cache, configuration and release-independent data stay under build/cluster
ENV = dict(os.environ, KUBECONFIG=KUBECONFIG, NO_PROXY="127.0.0.1,localhost",
           no_proxy="127.0.0.1,localhost",
           CLUSTER_COMPACTION_INTERVAL=os.environ.get("CLUSTER_COMPACTION_INTERVAL", "10s"),
           HELM_CACHE_HOME=os.path.join(STATE, "helm", "cache"),
           HELM_CONFIG_HOME=os.path.join(STATE, "helm", "config"),
           HELM_DATA_HOME=os.path.join(STATE, "helm", "data"))
CHART = os.path.join(ROOT, "charts", "gpuadmit")


class Fail(AssertionError):
    pass


def check(cond, msg):
    if not cond:
        raise Fail(msg)


def sh(*args, stdin=None, ok=True, timeout=120):
    p = subprocess.run(list(args), input=stdin, capture_output=True, text=True, env=ENV,
                       timeout=timeout)
    if ok and p.returncode != 0:
        raise Fail("%s: exit %d\n%s%s" % (" ".join(args), p.returncode, p.stdout, p.stderr))
    return p


def cluster(*args):
    return sh(CLUSTER, *args, timeout=300)


KUBECTL = None
HELM = None


def kubectl(*args, stdin=None, ok=True):
    return sh(KUBECTL, *args, stdin=stdin, ok=ok)


def helm(*args, ok=True):
    return sh(HELM, *args, ok=ok, timeout=180)


def kjson(*args):
    return json.loads(kubectl(*args, "-o", "json").stdout)


def wait(what, fn, limit=60):
    """fn() until it returns something true; bounded."""
    end = time.time() + limit
    last = None
    while time.time() < end:
        last = fn()
        if last:
            return last
        time.sleep(0.5)
    raise Fail("%s: not after %d s (last: %r)" % (what, limit, last))


def pods(ns, selector):
    return kjson("-n", ns, "get", "pods", "-l", selector)["items"]


def bound(items):
    return [p for p in items if p["spec"].get("nodeName")]


def unschedulable(p):
    for c in p.get("status", {}).get("conditions", []):
        if c["type"] == "PodScheduled" and c["status"] == "False":
            return c.get("message", "")
    return None


def gpu_pod(name, ns="ml", labels=None, gpus=1, priority=None, extra=None,
            resource="nvidia.com/gpu"):
    spec = {"containers": [{"name": "c", "image": "trainer:1",
                            "resources": {"limits": {resource: str(gpus)}}}]}
    if priority:
        spec["priorityClassName"] = priority
    spec.update(extra or {})
    return json.dumps({"apiVersion": "v1", "kind": "Pod",
                       "metadata": {"name": name, "namespace": ns, "labels": labels or {}},
                       "spec": spec})


def cpu_pod(name, ns="ml", labels=None):
    return json.dumps({"apiVersion": "v1", "kind": "Pod",
                       "metadata": {"name": name, "namespace": ns, "labels": labels or {}},
                       "spec": {"containers": [{"name": "c", "image": "web:1"}]}})


def replicaset(name, replicas, priority=None, tolerate=True, ns="ml"):
    spec = {"containers": [{"name": "c", "image": "trainer:1",
                            "resources": {"limits": {"nvidia.com/gpu": "1"}}}]}
    if priority:
        spec["priorityClassName"] = priority
    if tolerate:
        spec["tolerations"] = [{"key": "nvidia.com/gpu", "operator": "Exists",
                                "effect": "NoSchedule"}]
        spec["nodeSelector"] = {"nvidia.com/gpu.present": "true"}
    return json.dumps({"apiVersion": "apps/v1", "kind": "ReplicaSet",
                       "metadata": {"name": name, "namespace": ns},
                       "spec": {"replicas": replicas,
                                "selector": {"matchLabels": {"app": name}},
                                "template": {"metadata": {"labels": {"app": name}},
                                             "spec": spec}}})


def delete_and_wait(ns, kind, name, selector):
    kubectl("-n", ns, "delete", kind, name, "--ignore-not-found", "--wait=true")
    kubectl("-n", ns, "delete", "pods", "-l", selector, "--ignore-not-found", "--wait=true",
            "--grace-period=0", "--force")
    wait("pods of %s gone" % name, lambda: not pods(ns, selector))


def gpuadmit_get(path):
    ctx = ssl.create_default_context(cafile=os.path.join(STATE, "webhook", "ca.crt"))
    with urllib.request.urlopen(GPUADMIT + path, context=ctx, timeout=5) as r:
        return r.read().decode()


def metric(text, name, **labels):
    """The sum of the samples of NAME whose labels include LABELS."""
    total = 0.0
    for line in text.splitlines():
        if not line.startswith(name + "{") and not line.startswith(name + " "):
            continue
        m = re.match(r'^([^{ ]+)(\{[^}]*\})? (\S+)$', line)
        if not m or m.group(1) != name:
            continue
        got = dict(re.findall(r'(\w+)="([^"]*)"', m.group(2) or ""))
        if all(got.get(k) == v for k, v in labels.items()):
            total += float(m.group(3))
    return total


def webhook_live(resource="nvidia.com/gpu"):
    """Webhook configurations reach the apiserver through an informer: poll a server-side dry
    run of a pod asking for RESOURCE until gpuadmit's patch shows (the policy adds the GPU
    taint's toleration)."""
    def mutated():
        p = kubectl("create", "--dry-run=server", "-o", "json", "-f", "-",
                    stdin=gpu_pod("probe", resource=resource), ok=False)
        if p.returncode != 0:
            return False
        tol = json.loads(p.stdout)["spec"].get("tolerations", [])
        return any(t.get("key") == "nvidia.com/gpu" for t in tol)
    wait("gpuadmit's patch in a server-side dry run", mutated)


def webhook_gone():
    def plain():
        p = kubectl("create", "--dry-run=server", "-o", "json", "-f", "-",
                    stdin=gpu_pod("probe"), ok=False)
        if p.returncode != 0:
            return False
        tol = json.loads(p.stdout)["spec"].get("tolerations", [])
        return not any(t.get("key") == "nvidia.com/gpu" for t in tol)
    wait("no webhook in a server-side dry run", plain)


def rules_dir(name, capacity_action):
    """A copy of rules/ whose capacity rule says available: ACTION."""
    d = os.path.join(STATE, "rules-" + name)
    shutil.rmtree(d, ignore_errors=True)
    shutil.copytree(os.path.join(ROOT, "rules"), d,
                    ignore=shutil.ignore_patterns("tests", "examples", "Kustomization", "*.md"))
    path = os.path.join(d, "default.yaml")
    with open(path) as f:
        text = f.read()
    new = text.replace("available: Warn", "available: " + capacity_action)
    check(new != text or capacity_action == "Warn", "rules/default.yaml: no available: Warn")
    with open(path, "w") as f:
        f.write(new)
    return d


# ---------------------------------------------------------------------------------------------
# a. Seed 000: the benchmark ReplicaSet that only half fits.

def setup_seed000():
    kubectl("create", "namespace", "ml")
    wait("ServiceAccount ml/default",
         lambda: kubectl("-n", "ml", "get", "serviceaccount", "default", ok=False).returncode == 0)
    for name, value in (("batch-low", 1000), ("gpu-critical", 1000000)):
        kubectl("create", "priorityclass", name, "--value=%d" % value)
    # 12 of the 16 GPUs in use: the benchmark finds 4 free, one per node
    kubectl("apply", "-f", "-", stdin=replicaset("busy", 12, priority="batch-low"))
    wait("12 busy pods bound", lambda: len(bound(pods("ml", "app=busy"))) == 12)


def test_a_scheduler_without_gpuadmit():
    """Without gpuadmit the scheduler binds 4 of 8 and says why the other 4 wait."""
    kubectl("apply", "-f", "-", stdin=replicaset("stall", 8, priority="batch-low"))
    items = wait("8 stall pods, 4 bound and 4 unschedulable",
                 lambda: (lambda ps: ps if len(ps) == 8 and len(bound(ps)) == 4 and
                          sum(1 for p in ps if unschedulable(p)) == 4 else None)(
                     pods("ml", "app=stall")))
    msgs = [unschedulable(p) for p in items if unschedulable(p)]
    for m in msgs:
        check("4 Insufficient nvidia.com/gpu" in m, "PodScheduled message %r" % m)
    delete_and_wait("ml", "replicaset", "stall", "app=stall")


def test_a_explain_seed_benchmark():
    """gpuadmit explain --kubeconfig on the seed's literal benchmark (8 one-GPU pods, no class):
    the replay agrees with what kube-scheduler wrote, node count per reason, and says that a
    class would let the pods preempt the busy ones."""
    kubectl("apply", "-f", "-", stdin=replicaset("benchmark-rs", 8))
    items = wait("8 benchmark pods, 4 bound and 4 unschedulable",
                 lambda: (lambda ps: ps if len(ps) == 8 and len(bound(ps)) == 4 and
                          sum(1 for p in ps if unschedulable(p)) == 4 else None)(
                     pods("ml", "app=benchmark-rs")))
    waiting = sorted(p["metadata"]["name"] for p in items if unschedulable(p))
    msg = unschedulable([p for p in items if unschedulable(p)][0])
    binary = os.environ.get("GPUADMIT_BIN", os.path.join(ROOT, "build", "release", "gpuadmit"))
    p = sh(binary, "explain", "--kubeconfig", KUBECONFIG, "-n", "ml", "rs/benchmark-rs", "-o",
           "json", ok=False)
    check(p.returncode == 1, "explain exit %d: %s" % (p.returncode, p.stderr))
    doc = json.loads(p.stdout)
    check(sorted(x["name"] for x in doc["pods"]) == waiting,
          "explained %r, Pending %r" % ([x["name"] for x in doc["pods"]], waiting))
    # kube-scheduler's "N reason" entries (framework/types.go FitError), by explain's codes
    want = {}
    for part in msg.split(": ", 1)[1].split(". preemption:")[0].rstrip(".").split(", "):
        n, text = part.split(" ", 1)
        code = ("insufficient" if text.startswith("Insufficient ") else
                "selector-mismatch" if "node affinity/selector" in text else
                "untolerated-taint" if "untolerated taint" in text else text)
        want[code] = want.get(code, 0) + int(n)
    for x in doc["pods"]:
        check(x["scheduler"] == {"reason": "Unschedulable", "message": unschedulable(
            [q for q in items if q["metadata"]["name"] == x["name"]][0])},
            "condition of %s: %r" % (x["name"], x["scheduler"]))
        got = {r["code"]: len(r["nodes"]) for r in x["reasons"] if r["code"] in want}
        check(got == want, "nodes per reason %r, kube-scheduler's %r" % (got, want))
        codes = [r["code"] for r in x["reasons"]]
        # the nodes are full, and a class would let the pods preempt: that is the primary
        check(codes[:2] == ["no-priority-class", "insufficient"], "codes %r" % codes)
    # Cluster Autoscaler's status says the GPU nodes' group is at its max: explain reads the
    # ConfigMap from the real apiserver (listed by name) and names the group
    ca_status_install(target=4, max_size=4)
    try:
        p = sh(binary, "explain", "--kubeconfig", KUBECONFIG, "-n", "ml", "rs/benchmark-rs", "-o",
               "json", ok=False)
        doc = json.loads(p.stdout)
        for x in doc["pods"]:
            r = [r for r in x["reasons"] if r["code"] == "node-group-at-max"]
            check(r and r[0]["nodes"] == ["gpu-0", "gpu-1", "gpu-2", "gpu-3"] and
                  "node group eks-gpu-3ec8e5b6-24f7-8d73-4f5e-aa6e0c3f8d11, which could hold the "
                  "pod, is at its max size (4 of maxSize 4)" in r[0]["message"],
                  "node-group-at-max of %s: %r" % (x["name"], x["reasons"]))
            check(x["reasons"][0]["code"] == "node-group-at-max",
                  "the group at its max is the primary reason: %r" % x["reasons"])
    finally:
        ca_status_remove()
    # seed 003's remedy with a typo: the GPU Operator's config has key t4, the nodes pick
    # tesla-t4, so the plugin's config manager exits ("specified config tesla-t4 does not exist":
    # NVIDIA/k8s-device-plugin cmd/config-manager/main.go); explain reads the config from the real
    # apiserver (listed by name) and names the nodes
    ts = ("version: v1\nsharing:\n  timeSlicing:\n    resources:\n"
          "      - name: nvidia.com/gpu\n        replicas: 4\n")
    gpus = ["gpu-0", "gpu-1", "gpu-2", "gpu-3"]
    kubectl("create", "namespace", "gpu-operator", ok=False)
    try:
        kubectl("apply", "-f", "-", stdin=json.dumps({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "time-slicing-config", "namespace": "gpu-operator"},
            "data": {"t4": ts}}))
        for n in gpus:
            kubectl("label", "--overwrite", "node", n, "nvidia.com/device-plugin.config=tesla-t4")
        p = sh(binary, "explain", "--kubeconfig", KUBECONFIG, "-n", "ml", "rs/benchmark-rs", "-o",
               "json", ok=False)
        doc = json.loads(p.stdout)
        for x in doc["pods"]:
            r = [r for r in x["reasons"] if r["code"] == "device-plugin-config-missing"]
            check(r and r[0]["nodes"] == gpus and
                  "nvidia.com/device-plugin.config=tesla-t4" in r[0]["message"] and
                  "gpu-operator/time-slicing-config: t4" in r[0]["message"],
                  "device-plugin-config-missing of %s: %r" % (x["name"], x["reasons"]))
    finally:
        for n in gpus:
            kubectl("label", "node", n, "nvidia.com/device-plugin.config-", ok=False)
        kubectl("-n", "gpu-operator", "delete", "configmap", "time-slicing-config",
                "--ignore-not-found")
    delete_and_wait("ml", "replicaset", "benchmark-rs", "app=benchmark-rs")


# Cluster Autoscaler 1.30's YAML status (clusterstate/api/types.go; the shape of its
# clusterstate/utils/status_test.yaml) for one EKS managed node group, whose nodes the GPU nodes
# become by the label EKS puts on them.
CA_GROUP = "eks-gpu-3ec8e5b6-24f7-8d73-4f5e-aa6e0c3f8d11"
T4_GROUP = "eks-gpu-t4-1cc7a3f2-0e5d-4b8e-9f36-6b1d2a7c4e90"  # seed-003.yaml's nodes' group
GPU_NODES = ["gpu-0", "gpu-1", "gpu-2", "gpu-3"]


def ca_status_apply(group, target, max_size, scale_up="NoActivity", backoff=""):
    status = ("time: \"2026-12-02 03:00:00.0 +0000 UTC\"\nautoscalerStatus: \"Running\"\n"
              "nodeGroups:\n  - name: \"%s\"\n    health:\n      status: \"Healthy\"\n"
              "      nodeCounts:\n        registered:\n          total: %d\n"
              "          ready: %d\n          notStarted: 0\n          unready:\n"
              "            total: 0\n            resourceUnready: 0\n"
              "        longUnregistered: 0\n        unregistered: 0\n"
              "      cloudProviderTarget: %d\n      minSize: 1\n      maxSize: %d\n"
              "    scaleUp:\n      status: \"%s\"\n%s"
              % (group, target, target, target, max_size, scale_up, backoff))
    kubectl("apply", "-f", "-", stdin=json.dumps({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "cluster-autoscaler-status", "namespace": "kube-system"},
        "data": {"status": status}}))


def ca_status_install(target, max_size):
    ca_status_apply(CA_GROUP, target, max_size)
    for n in GPU_NODES:
        kubectl("label", "--overwrite", "node", n, "eks.amazonaws.com/nodegroup=gpu")


def ca_status_remove():
    kubectl("-n", "kube-system", "delete", "configmap", "cluster-autoscaler-status",
            "--ignore-not-found")
    for n in GPU_NODES:
        kubectl("label", "node", n, "eks.amazonaws.com/nodegroup-")


def test_a_install_enforce():
    """kubectl apply -k of the enforce overlay, gpuadmit serving with its ServiceAccount token."""
    cluster("install", "enforce")
    cluster("gpuadmit-start")
    webhook_live()


def test_a_warning_default_policy():
    """The default policy: kubectl apply prints the capacity warning; the ReplicaSet is made."""
    p = kubectl("apply", "-f", "-", stdin=replicaset("stall", 8, priority="batch-low"))
    check("Warning:" in p.stderr and "only 4 of 8 more pods fit now" in p.stderr,
          "kubectl apply stderr %r" % p.stderr)
    delete_and_wait("ml", "replicaset", "stall", "app=stall")


def test_a_deny_and_dry_run():
    """available: Deny: refused with the arithmetic; a server-side dry run shows the same denial
    and reserves nothing (a 4-replica ReplicaSet still fits afterwards)."""
    cluster("gpuadmit-start", "--rules", rules_dir("deny", "Deny"))
    webhook_live()
    for extra in ((), ("--dry-run=server",)):
        p = kubectl("apply", *extra, "-f", "-", stdin=replicaset("stall", 8, priority="batch-low"),
                    ok=False)
        check(p.returncode != 0 and 'admission webhook "workloads.validate.gpuadmit.io" denied'
              in p.stderr and "only 4 of 8 more pods fit now" in p.stderr,
              "kubectl apply %s: exit %d, stderr %r" % (extra, p.returncode, p.stderr))
        check(kubectl("-n", "ml", "get", "rs", "stall", ok=False).returncode != 0,
              "the refused ReplicaSet exists")
    for _ in range(3):
        p = kubectl("apply", "--dry-run=server", "-f", "-", stdin=replicaset("fits", 4,
                                                                              priority="batch-low"))
        check("Warning" not in p.stderr, "dry run of 4 replicas: %r" % p.stderr)


def test_a_scale_past_capacity():
    """kubectl scale of a ReplicaSet that fits, past what is free: refused, with the arithmetic."""
    kubectl("apply", "-f", "-", stdin=replicaset("fits", 2, priority="batch-low"))
    wait("2 fits pods bound", lambda: len(bound(pods("ml", "app=fits"))) == 2)
    # at once, within the reservation window (reserveSeconds, 10) of the 2 just admitted: their
    # reservation ends when the view shows the ReplicaSet's 2 pods, so the GPUs kube-scheduler
    # gave them count once, and 2 of the 4 free are left
    p = kubectl("-n", "ml", "scale", "rs", "fits", "--replicas=4", "--dry-run=server", ok=False)
    check(p.returncode == 0 and "Warning" not in p.stderr, "dry run of 2 more: %r" % p.stderr)
    p = kubectl("-n", "ml", "scale", "rs", "fits", "--replicas=8", ok=False)
    check(p.returncode != 0 and "scale.validate.gpuadmit.io" in p.stderr and
          "only 2 of 6 more pods fit now" in p.stderr, "kubectl scale: %r" % p.stderr)
    eq_rs = kjson("-n", "ml", "get", "rs", "fits")["spec"]["replicas"]
    check(eq_rs == 2, "replicas after the refused scale: %r" % eq_rs)
    delete_and_wait("ml", "replicaset", "fits", "app=fits")


def test_a_hpa_warning():
    """An HPA whose maxReplicas cannot fit: kubectl prints gpuadmit's warning."""
    kubectl("apply", "-f", "-", stdin=replicaset("fits", 2, priority="batch-low"))
    wait("2 fits pods bound", lambda: len(bound(pods("ml", "app=fits"))) == 2)
    hpa = {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
           "metadata": {"name": "fits", "namespace": "ml"},
           "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "ReplicaSet",
                                       "name": "fits"},
                    "minReplicas": 1, "maxReplicas": 8,
                    "metrics": [{"type": "Resource", "resource": {
                        "name": "cpu", "target": {"type": "Utilization",
                                                  "averageUtilization": 80}}}]}}
    p = kubectl("apply", "-f", "-", stdin=json.dumps(hpa))
    # at maxReplicas, 6 more pods for the 2 GPUs still free: the scheduler would bind 2 and
    # leave 4 Pending, as it does with the benchmark (test_a_scheduler_without_gpuadmit)
    check("Warning: gpuadmit [capacity]: HorizontalPodAutoscaler ml/fits (target ReplicaSet "
          "fits, maxReplicas 8): only 2 of 6 more pods fit now, the rest will wait Pending"
          in p.stderr, "kubectl apply of the HPA: %r" % p.stderr)
    kubectl("-n", "ml", "delete", "hpa", "fits")
    delete_and_wait("ml", "replicaset", "fits", "app=fits")


# ---------------------------------------------------------------------------------------------
# f. No lock-out: gpuadmit stopped.

def test_f_enforce_fails_closed_only_for_gpu_pods():
    """Enforce (Fail), gpuadmit down: a GPU pod is refused with the apiserver's own error; a pod
    without GPUs and a kube-system GPU pod are admitted."""
    cluster("gpuadmit-stop")
    p = kubectl("create", "-f", "-", stdin=gpu_pod("f-gpu"), ok=False)
    check(p.returncode != 0 and 'failed calling webhook "pods.validate.gpuadmit.io"' in p.stderr,
          "GPU pod with gpuadmit down: %r" % p.stderr)
    kubectl("create", "-f", "-", stdin=cpu_pod("f-cpu"))
    kubectl("create", "-f", "-", stdin=gpu_pod("f-system", ns="kube-system"))
    kubectl("-n", "ml", "delete", "pod", "f-cpu", "--grace-period=0", "--force")
    kubectl("-n", "kube-system", "delete", "pod", "f-system", "--grace-period=0", "--force")


def test_f_pods_without_gpus_never_reach_gpuadmit():
    """The apiserver evaluates the matchConditions: pods needing no GPU are never sent."""
    cluster("gpuadmit-start")
    webhook_live()
    before = gpuadmit_get("/metrics")
    for i in range(3):
        kubectl("create", "-f", "-", stdin=cpu_pod("f-cpu-%d" % i))
    kubectl("create", "-f", "-", stdin=gpu_pod("f-gpu"))
    after = gpuadmit_get("/metrics")
    n0 = metric(before, "gpuadmit_admission_requests_total")
    n1 = metric(after, "gpuadmit_admission_requests_total")
    # the GPU pod: one /mutate and one /validate call, nothing for the three others
    check(n1 - n0 == 2, "admission requests went from %g to %g" % (n0, n1))
    for i in range(3):
        kubectl("-n", "ml", "delete", "pod", "f-cpu-%d" % i, "--grace-period=0", "--force")
    kubectl("-n", "ml", "delete", "pod", "f-gpu", "--grace-period=0", "--force")


def test_f_audit_fails_open():
    """Audit overlay (Ignore), gpuadmit down: a GPU pod is created as it was sent (nothing
    patched), and the apiserver records that it failed open: an audit annotation
    failed-open.{mutation,validating}.webhook.admission.k8s.io/round_0_index_N naming each
    gpuadmit webhook it could not call (k8s.io/apiserver v0.37
    pkg/admission/plugin/webhook/{mutating,validating}/dispatcher.go)."""
    cluster("uninstall")
    cluster("install", "audit")
    cluster("gpuadmit-stop")
    p = kubectl("create", "-f", "-", stdin=gpu_pod("f-audit"))
    check("Warning" not in p.stderr, "kubectl create: %r" % p.stderr)
    pod = kjson("-n", "ml", "get", "pod", "f-audit")
    check(pod["metadata"].get("uid") and not any(
        t.get("key") == "nvidia.com/gpu" for t in pod["spec"].get("tolerations", [])) and
        "priorityClassName" not in pod["spec"], "the pod as created: %r" % pod["spec"])
    events = wait("the audit event of pod f-audit", lambda: audit_events("f-audit"), limit=30)
    ann = events[-1].get("annotations", {})
    def failed(kind):
        return {v for k, v in ann.items()
                if k.startswith("failed-open.%s.webhook.admission.k8s.io/round_0_index_" % kind)}
    check("pods.mutate.gpuadmit.io" in failed("mutation") and
          "pods.validate.gpuadmit.io" in failed("validating"), "failed-open annotations %r" % ann)
    kubectl("-n", "ml", "delete", "pod", "f-audit", "--grace-period=0", "--force")
    cluster("uninstall")
    cluster("install", "enforce")
    cluster("gpuadmit-start")
    webhook_live()


# ---------------------------------------------------------------------------------------------
# g. The opt-out guard (ValidatingAdmissionPolicy of the enforce overlay).

def test_g_policy_compiles():
    """The apiserver type-checks the policy's CEL: no warnings, the binding is there."""
    def checked():
        vap = kjson("get", "validatingadmissionpolicy", "gpuadmit-exempt-label")
        return vap.get("status", {}).get("typeChecking") is not None and vap
    vap = wait("the policy's type check", checked)
    warnings = vap["status"]["typeChecking"].get("expressionWarnings", [])
    check(not warnings, "type-check warnings %r" % warnings)
    kubectl("get", "validatingadmissionpolicybinding", "gpuadmit-exempt-label")


def test_g_opt_out_label():
    """A user outside gpuadmit:exempt cannot set the label; a member can."""
    kubectl("-n", "ml", "create", "rolebinding", "alice-edit", "--clusterrole=edit",
            "--user=alice")
    label = {"gpuadmit.io/exempt": "true"}
    p = wait("the policy denying alice", lambda: (lambda r: r if r.returncode != 0 else
                                                   kubectl("-n", "ml", "delete", "pod", "g-1",
                                                           "--grace-period=0", "--force")
                                                   and None)(
        kubectl("--as=alice", "create", "-f", "-", stdin=gpu_pod("g-1", labels=label),
                ok=False)))
    check("ValidatingAdmissionPolicy 'gpuadmit-exempt-label'" in p.stderr and
          "only members of the group gpuadmit:exempt may set it" in p.stderr,
          "alice: %r" % p.stderr)
    kubectl("--as=alice", "--as-group=gpuadmit:exempt", "--as-group=system:authenticated",
            "create", "-f", "-", stdin=gpu_pod("g-2", labels=label))
    # an exempt pod is never sent to gpuadmit: no toleration patched in
    tol = kjson("-n", "ml", "get", "pod", "g-2")["spec"].get("tolerations", [])
    check(not any(t.get("key") == "nvidia.com/gpu" for t in tol), "exempt pod patched: %r" % tol)
    kubectl("-n", "ml", "delete", "pod", "g-2", "--grace-period=0", "--force")
    kubectl("-n", "ml", "delete", "rolebinding", "alice-edit")


# ---------------------------------------------------------------------------------------------
# b. PriorityClass and preemption.

def deployment(name, replicas, priority=None, gpus=1, ns="ml", tolerate=False,
               resource="nvidia.com/gpu"):
    spec = {"containers": [{"name": "c", "image": "inference:2",
                            "resources": {"limits": {resource: str(gpus)}}}]}
    if priority:
        spec["priorityClassName"] = priority
    if tolerate:
        spec["tolerations"] = [{"key": "nvidia.com/gpu", "operator": "Exists",
                                "effect": "NoSchedule"}]
    return json.dumps({"apiVersion": "apps/v1", "kind": "Deployment",
                       "metadata": {"name": name, "namespace": ns},
                       "spec": {"replicas": replicas,
                                "selector": {"matchLabels": {"app": name}},
                                "template": {"metadata": {"labels": {"app": name}},
                                             "spec": spec}}})


def act_as_kubelet(ns, selector):
    """No kubelet confirms a pod's end: force-delete the pods being deleted, as a kubelet
    would once their containers stopped."""
    for p in pods(ns, selector):
        if p["metadata"].get("deletionTimestamp"):
            kubectl("-n", ns, "delete", "pod", p["metadata"]["name"], "--grace-period=0",
                    "--force", "--ignore-not-found")


def test_b_default_priority_class():
    """A GPU Deployment without priorityClassName gets gpu-standard, and the apiserver's Priority
    admission accepts its pods (their priority is the class's value)."""
    kubectl("apply", "-f", "-", stdin=deployment("b-std", 1))
    d = kjson("-n", "ml", "get", "deployment", "b-std")
    pc = d["spec"]["template"]["spec"].get("priorityClassName")
    check(pc == "gpu-standard", "the Deployment's priorityClassName %r" % pc)
    ps = wait("the pod of b-std", lambda: pods("ml", "app=b-std"))
    value = kjson("get", "priorityclass", "gpu-standard")["value"]
    check(ps[0]["spec"].get("priority") == value, "pod priority %r, class value %r"
          % (ps[0]["spec"].get("priority"), value))
    delete_and_wait("ml", "deployment", "b-std", "app=b-std")


def test_b_preemption():
    """available: Deny. A high-priority workload that fits only by preempting is admitted with a
    warning that names what it takes, and kube-scheduler preempts the low-priority pods holding the GPUs: the victims go, the new
    pods are bound.

    kube-scheduler v1.37 (pkg/scheduler/framework/preemption/executor.go) marks each victim
    DisruptionTarget (reason PreemptionByScheduler), deletes it, and records the event
    Preempted "Preempted by pod UID on node NODE" on it. 4 GPUs are free, one a node, so 4 of
    the 8 fit as they are and each of the other 4 preempts one busy pod: 4 victims."""
    cluster("gpuadmit-start", "--rules", rules_dir("deny", "Deny"))
    webhook_live()
    busy_before = {p["metadata"]["name"] for p in pods("ml", "app=busy")}
    p = kubectl("apply", "-f", "-", stdin=replicaset("urgent", 8, priority="gpu-critical"))
    # admitted, and told whose pods go: the 4 the scheduler evicts below
    check("fits only by preempting: its 8 pods take 4 nvidia.com/gpu from lower-priority pods, "
          "which will be evicted: 4 in namespace ml at priority 1000 (batch-low)" in p.stderr,
          "kubectl apply: %r" % p.stderr)
    marked = {}

    def all_bound():
        # what a kubelet would do once the containers stopped (act_as_kubelet), after noting
        # how each pod went
        for v in pods("ml", "app=busy"):
            if v["metadata"].get("deletionTimestamp"):
                name = v["metadata"]["name"]
                marked[name] = [c for c in v["status"].get("conditions", [])
                                if c["type"] == "DisruptionTarget"]
                kubectl("-n", "ml", "delete", "pod", name, "--grace-period=0", "--force",
                        "--ignore-not-found")
        return len(bound(pods("ml", "app=urgent"))) == 8
    wait("8 urgent pods bound after preemption", all_bound, limit=120)
    urgent = {u["metadata"]["uid"]: u for u in pods("ml", "app=urgent")}
    check(len(bound(urgent.values())) == 8, "urgent: %d bound" % len(bound(urgent.values())))
    victims = {}
    for e in kjson("-n", "ml", "get", "events")["items"]:
        if e.get("reason") != "Preempted":
            continue
        m = re.match(r"Preempted by pod (\S+) on node (\S+)$", e.get("message", ""))
        check(m and m.group(1) in urgent and urgent[m.group(1)]["spec"]["nodeName"] == m.group(2),
              "event %r: not by an urgent pod bound to that node" % e.get("message"))
        check((e.get("reportingComponent") or e.get("source", {}).get("component")) ==
              "default-scheduler", "event from %r" % e.get("source"))
        victims[e["involvedObject"]["name"]] = m.group(2)
    check(len(victims) == 4 and set(victims) <= busy_before,
          "victims %r of busy %r" % (sorted(victims), sorted(busy_before)))
    busy = pods("ml", "app=busy")
    check(not set(victims) & {b["metadata"]["name"] for b in busy}, "a victim is still there")
    for v in victims:
        conds = marked.get(v) or [{}]
        check(conds[0].get("reason") == "PreemptionByScheduler" and
              conds[0].get("status") == "True", "victim %s's DisruptionTarget: %r" % (v, conds))
    # the busy ReplicaSet made replacements, which wait: the GPUs are the urgent pods' now
    check(len(bound(busy)) == 8 and len(busy) == 12,
          "busy: %d pods, %d bound" % (len(busy), len(bound(busy))))
    delete_and_wait("ml", "replicaset", "urgent", "app=urgent")
    wait("12 busy pods bound again", lambda: len(bound(pods("ml", "app=busy"))) == 12)
    cluster("gpuadmit-start")
    webhook_live()


# ---------------------------------------------------------------------------------------------
# c. Seed 003: EKS time-sliced T4s under rules/examples/eks-time-sliced-t4.yaml.

def test_c_seed003_time_sliced():
    """gpu-inference-app, with no tolerations or nodeSelector, gets both patched; the scheduler
    binds its pods to the tainted T4 nodes, 4 per time-sliced T4; 2 shared GPUs are refused."""
    for kind, name, sel in (("replicaset", "busy", "app=busy"),):
        delete_and_wait("ml", kind, name, sel)
    cluster("nodes", "seed-003")
    d = os.path.join(STATE, "rules-eks")
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    shutil.copy(os.path.join(ROOT, "rules", "examples", "eks-time-sliced-t4.yaml"), d)
    # and the default policy's capacity rule, which the example leaves out
    with open(os.path.join(d, "eks-time-sliced-t4.yaml"), "a") as f:
        f.write("    - name: capacity\n      type: capacity\n      action: Deny\n")
    cluster("gpuadmit-start", "--rules", d)
    webhook_live()
    kubectl("apply", "-f", "-", stdin=deployment("gpu-inference-app", 8))
    spec = kjson("-n", "ml", "get", "deployment", "gpu-inference-app")["spec"]["template"]["spec"]
    check(any(t.get("key") == "nvidia.com/gpu" for t in spec.get("tolerations", [])),
          "tolerations %r" % spec.get("tolerations"))
    check(spec.get("nodeSelector", {}).get("nvidia.com/gpu.present") == "true",
          "nodeSelector %r" % spec.get("nodeSelector"))
    ps = wait("8 pods bound", lambda: (lambda x: x if len(bound(x)) == 8 else None)(
        pods("ml", "app=gpu-inference-app")), limit=90)
    per_node = {}
    for p in ps:
        per_node[p["spec"]["nodeName"]] = per_node.get(p["spec"]["nodeName"], 0) + 1
    check(per_node == {"g4dn-0": 4, "g4dn-1": 4}, "pods per node %r" % per_node)
    p = kubectl("apply", "-f", "-", stdin=deployment("two-slices", 1, gpus=2), ok=False)
    check(p.returncode != 0 and "denied the request" in p.stderr, "2 slices: %r" % p.stderr)
    # Seed 003's Cluster Autoscaler: "pod didn't trigger scale-up: ... max node group size
    # reached". Its status says the T4 nodes' group (eks.amazonaws.com/nodegroup=gpu-t4, ASG
    # eks-gpu-t4-UUID) is at its max: 4 more replicas are refused, naming it
    ca_status_apply(T4_GROUP, 2, 2)
    try:
        def scaled(n, want):
            p = kubectl("-n", "ml", "scale", "deployment", "gpu-inference-app",
                        "--replicas=%d" % n, "--dry-run=server", ok=False)
            return p if want in p.stderr else None
        p = wait("kubectl scale refused naming the group at its max", lambda: scaled(
            12, "node group %s is at its max size (2 of maxSize 2): Cluster Autoscaler adds no "
            "node to it (max node group size reached)" % T4_GROUP), limit=30)
        check(p.returncode != 0 and "denied the request" in p.stderr and
              "deployments ml/gpu-inference-app (scale) can never fit: 12 pods at once, at most 8 "
              "fit (8 on the eligible nodes, none on new ones)" in p.stderr, "scale at max: %r" % p.stderr)
        # the group may grow by one node: the same 4 more are admitted, told how it grows
        ca_status_apply(T4_GROUP, 2, 3)
        wait("the group's new max in the view", lambda: scaled(12, "fits after scale-up"),
             limit=30)
        p = kubectl("-n", "ml", "scale", "deployment", "gpu-inference-app", "--replicas=12")
        check("deployments ml/gpu-inference-app (scale) fits after scale-up: node group %s adds 1 "
              "node of 4 pods each (2 to 3 of maxSize 3); 0 of its 4 more pods fit now"
              % T4_GROUP in p.stderr,
              "scale after scale-up: %r" % p.stderr)
        dep = kjson("-n", "ml", "get", "deployment", "gpu-inference-app")
        check(dep["spec"]["replicas"] == 12, "replicas %r" % dep["spec"]["replicas"])
        # and kube-scheduler leaves those 4 Pending on the full T4s: the node that would take
        # them is the autoscaler's to add
        ps = wait("4 pods Pending, Insufficient nvidia.com/gpu", lambda: (
            lambda x: x if len(x) == 12 and sum(1 for q in x if unschedulable(q) and
                                                 "Insufficient nvidia.com/gpu" in unschedulable(q))
            == 4 else None)(pods("ml", "app=gpu-inference-app")), limit=60)
        check(len(bound(ps)) == 8, "bound %d" % len(bound(ps)))
    finally:
        kubectl("-n", "kube-system", "delete", "configmap", "cluster-autoscaler-status",
                "--ignore-not-found")
    delete_and_wait("ml", "deployment", "gpu-inference-app", "app=gpu-inference-app")
    cluster("nodes", "seed-000")
    kubectl("apply", "-f", "-", stdin=replicaset("busy", 12, priority="batch-low"))
    wait("12 busy pods bound", lambda: len(bound(pods("ml", "app=busy"))) == 12)
    cluster("gpuadmit-start")
    webhook_live()


def test_c_mixed_pools():
    """Two EKS node groups as two GPU pools of rules/examples/eks-t4-a100-mig.yaml: Deployments
    of T4 slices and of MIG slices, written without tolerations or nodeSelector, get their own
    pool's, and kube-scheduler binds the T4 pods to the g4dn nodes only and the MIG pods to the
    p4d node (which a toleration of the T4 pool alone would not reach: dedicated=a100)."""
    delete_and_wait("ml", "replicaset", "busy", "app=busy")
    cluster("nodes", "eks-mixed")
    d = os.path.join(STATE, "rules-mixed")
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    shutil.copy(os.path.join(ROOT, "rules", "examples", "eks-t4-a100-mig.yaml"), d)
    cluster("gpuadmit-start", "--rules", d)
    webhook_live("nvidia.com/gpu.shared")
    want = {"infer": ("nvidia.com/gpu.shared", 6, {"nvidia.com/gpu.product": "Tesla-T4"},
                      ["nvidia.com/gpu"], {"g4dn-0", "g4dn-1"}),
            "train": ("nvidia.com/mig-1g.5gb", 3,
                      {"nvidia.com/mig.strategy": "mixed",
                       "nvidia.com/gpu.product": "A100-SXM4-40GB"},
                      ["nvidia.com/gpu", "dedicated"], {"p4d-0"})}
    for name, (res, n, sel, tols, nodes) in want.items():
        kubectl("apply", "-f", "-", stdin=deployment(name, n, resource=res))
        spec = kjson("-n", "ml", "get", "deployment", name)["spec"]["template"]["spec"]
        check(spec.get("nodeSelector") == sel, "%s: nodeSelector %r" % (name, spec.get("nodeSelector")))
        got = [t.get("key") for t in spec.get("tolerations", [])]
        check(got == tols, "%s: tolerations %r" % (name, spec.get("tolerations")))
    for name, (res, n, sel, tols, nodes) in want.items():
        ps = wait("%d %s pods bound" % (n, name), lambda: (lambda x: x if len(bound(x)) == n
                                                            else None)(pods("ml", "app=" + name)),
                  limit=90)
        on = {p["spec"]["nodeName"] for p in ps}
        check(on <= nodes, "%s pods on %r, not only %r" % (name, sorted(on), sorted(nodes)))
    for name in want:
        delete_and_wait("ml", "deployment", name, "app=" + name)
    cluster("nodes", "seed-000")
    cluster("gpuadmit-start")
    webhook_live()
    kubectl("apply", "-f", "-", stdin=replicaset("busy", 12, priority="batch-low"))
    wait("12 busy pods bound", lambda: len(bound(pods("ml", "app=busy"))) == 12)


# ---------------------------------------------------------------------------------------------
# d. A device-plugin restart; e. the watch.

def view():
    return json.loads(gpuadmit_get("/debug/view"))


def gpus(q):
    return int(q) if q is not None else 0


def expected_from_kubectl():
    """What the view should hold, from kubectl get: GPU amounts per node and the GPU pods."""
    nodes, want_pods = {}, {}
    ps = kjson("get", "pods", "-A")["items"]
    for p in ps:
        if p.get("status", {}).get("phase") in ("Succeeded", "Failed"):
            continue
        d = sum(gpus(c.get("resources", {}).get("limits", {}).get("nvidia.com/gpu"))
                for c in p["spec"]["containers"])
        if d:
            want_pods["%s/%s" % (p["metadata"]["namespace"], p["metadata"]["name"])] = \
                p["spec"].get("nodeName", "")
    for n in kjson("get", "nodes")["items"]:
        name, st = n["metadata"]["name"], n["status"]
        used = sum(gpus(c.get("resources", {}).get("limits", {}).get("nvidia.com/gpu"))
                   for p in ps if p["spec"].get("nodeName") == name and
                   p.get("status", {}).get("phase") not in ("Succeeded", "Failed")
                   for c in p["spec"]["containers"])
        nodes[name] = {
            "ready": any(c["type"] == "Ready" and c["status"] == "True"
                         for c in st.get("conditions", [])),
            "unschedulable": bool(n["spec"].get("unschedulable", False)),
            "allocatable": gpus(st.get("allocatable", {}).get("nvidia.com/gpu")),
            "capacity": gpus(st.get("capacity", {}).get("nvidia.com/gpu")),
            "used": used}
    return {"nodes": nodes, "pods": want_pods}


def from_view(v):
    return {"nodes": {name: {"ready": n["ready"], "unschedulable": n["unschedulable"],
                             "allocatable": n["allocatable"].get("nvidia.com/gpu", 0),
                             "capacity": n["capacity"].get("nvidia.com/gpu", 0),
                             "used": n["used"].get("nvidia.com/gpu", 0)}
                      for name, n in v["nodes"].items()},
            "pods": {k: p["node"] for k, p in v["pods"].items()}}


def view_agrees(what):
    state = {}

    def same():
        state["want"], state["got"] = expected_from_kubectl(), from_view(view())
        return state["want"] == state["got"]
    try:
        wait("/debug/view agreeing with kubectl get " + what, same, limit=30)
    except Fail:
        raise Fail("/debug/view %s: kubectl says %s, the view %s" % (
            what, json.dumps(state["want"], sort_keys=True), json.dumps(state["got"],
                                                                        sort_keys=True)))


def patch_gpus(node, allocatable, capacity=None):
    st = {"allocatable": {"nvidia.com/gpu": str(allocatable)}}
    if capacity is not None:
        st["capacity"] = {"nvidia.com/gpu": str(capacity)}
    kubectl("patch", "node", node, "--subresource=status", "--type=merge", "-p",
            json.dumps({"status": st}))


def seen_by_view(node, step):
    """Label NODE with STEP after a change to its status, and wait for the view to show the
    label: a watch delivers a Node's changes in order, so the view has seen the change too."""
    kubectl("label", "node", node, "--overwrite", "gpuadmit.test/step=%d" % step)
    wait("the view at step %d of %s" % (step, node), lambda: view()["nodes"][node]["labels"].get(
        "gpuadmit.test/step") == str(step), limit=30)


def test_d_device_plugin_restart():
    """A node's GPU allocatable drops to 0 (its capacity does not) and comes back within
    --allocatable-grace: no false denial meanwhile; past the grace the view counts the loss."""
    cluster("gpuadmit-start", "--rules", rules_dir("deny", "Deny"), "--allocatable-grace", "8")
    webhook_live()
    fits = replicaset("fits", 4, priority="batch-low")
    kubectl("apply", "--dry-run=server", "-f", "-", stdin=fits)
    patch_gpus("gpu-0", 0)
    seen_by_view("gpu-0", 1)
    got = kjson("get", "node", "gpu-0")["status"]["allocatable"].get("nvidia.com/gpu")
    check(got == "0", "the apiserver's allocatable of gpu-0: %r" % got)
    kept = view()["nodes"]["gpu-0"]["allocatable"].get("nvidia.com/gpu")
    check(kept == 4, "the view's allocatable of gpu-0 within the grace period: %r" % kept)
    p = kubectl("apply", "--dry-run=server", "-f", "-", stdin=fits, ok=False)
    check(p.returncode == 0, "within the grace period: %r" % p.stderr)
    patch_gpus("gpu-0", 4)
    seen_by_view("gpu-0", 2)
    kubectl("apply", "--dry-run=server", "-f", "-", stdin=fits)
    patch_gpus("gpu-0", 0)
    wait("the view counting gpu-0's loss",
         lambda: view()["nodes"]["gpu-0"]["allocatable"].get("nvidia.com/gpu", 0) == 0,
         limit=30)
    p = kubectl("apply", "--dry-run=server", "-f", "-", stdin=fits, ok=False)
    check(p.returncode != 0 and "only 3 of 4 more pods fit now" in p.stderr,
          "after the grace period: %r" % p.stderr)
    patch_gpus("gpu-0", 4)
    kubectl("label", "node", "gpu-0", "gpuadmit.test/step-")
    cluster("gpuadmit-start")
    webhook_live()


def test_e_view_after_changes():
    """/debug/view agrees with kubectl get after pods and nodes change."""
    view_agrees("at the start")
    kubectl("-n", "ml", "scale", "rs", "busy", "--replicas=9")
    wait("busy scaled to 9", lambda: (act_as_kubelet("ml", "app=busy"),
                                      len(pods("ml", "app=busy")) == 9)[1])
    view_agrees("after a scale-down")
    kubectl("cordon", "gpu-3")
    patch_gpus("gpu-2", 2, capacity=2)
    view_agrees("after a cordon and a node's GPUs changing")
    kubectl("uncordon", "gpu-3")
    patch_gpus("gpu-2", 4, capacity=4)
    kubectl("-n", "ml", "scale", "rs", "busy", "--replicas=12")
    wait("12 busy pods bound", lambda: len(bound(pods("ml", "app=busy"))) == 12)
    view_agrees("after a scale-up")


def relists():
    return metric(gpuadmit_get("/metrics"), "gpuadmit_cluster_relists_total")


GPUADMIT_LOG = os.path.join(STATE, "logs", "gpuadmit.log")


def log_size():
    return os.path.getsize(GPUADMIT_LOG)


def log_lines(since=0):
    """gpuadmit's JSON log lines from byte offset SINCE (a line still being written is left)."""
    out = []
    with open(GPUADMIT_LOG) as f:
        f.seek(since)
        for line in f:
            try:
                out.append(json.loads(line))
            except ValueError:
                pass
    return out


def etcd_compacted(rev):
    """etcd's own word: True once revision REV is compacted away (a range read at it fails with
    mvcc's ErrCompacted), through etcd's JSON gateway."""
    body = json.dumps({"key": base64.b64encode(b"/registry/").decode(),
                       "range_end": base64.b64encode(b"/registry0").decode(),
                       "revision": int(rev), "count_only": True}).encode()
    req = urllib.request.Request(ETCD + "/v3/kv/range", data=body, method="POST")
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(req, timeout=5) as r:
            json.load(r)
            return False
    except urllib.error.HTTPError as e:
        msg = json.load(e).get("message", "")
        if "required revision has been compacted" in msg:
            return True
        raise Fail("etcd range at revision %s: %s" % (rev, msg))


def scale_busy(n):
    kubectl("-n", "ml", "scale", "rs", "busy", "--replicas=%d" % n)
    wait("busy at %d, all bound" % n, lambda: (act_as_kubelet("ml", "app=busy"), (lambda ps: len(
        ps) == n and len(bound(ps)) == n)(pods("ml", "app=busy")))[1], limit=60)


def test_e_compaction_served_by_watch_cache():
    """etcd compacts the revisions gpuadmit's watches resume from, and kube-apiserver's watch
    cache still serves them: no 410, no relist, and the view agrees with kubectl get.

    k8s.io/apiserver v0.37 (pkg/storage/cacher): CacheDelegator.Watch hands every watch to the
    cacher (delegator.go), whose history answers 410 "too old resource version" only for a
    resourceVersion older than the events it has held since its own list from etcd
    (watch_cache_history.go, GetIntervalLocked); its compactor (compactor.go) trims only its
    list snapshots. So with the watch cache on, etcd's compaction never reaches gpuadmit."""
    # 5 s watches: each kind's watch ends and resumes every 5 s, at the resourceVersion it last
    # saw (logged at debug level); a quiet kind's is its list's, which etcd compacts meanwhile
    cluster("gpuadmit-start", "--watch-timeout", "5", "--log-level", "debug")
    webhook_live()
    before = relists()
    scale_busy(10)
    first = min(int(l["resourceVersion"]) for l in wait("gpuadmit's watches", lambda: [
        l for l in log_lines() if l.get("msg") == "watch"]))
    wait("etcd compacting revision %d" % first, lambda: etcd_compacted(first), limit=90)
    at = log_size()
    resumed = wait("a watch resumed at a revision etcd has compacted", lambda: [
        l for l in log_lines(at) if l.get("msg") == "watch" and
        etcd_compacted(l["resourceVersion"])], limit=30)
    scale_busy(12)
    view_agrees("after etcd compacted what the watches resume from")
    gone = [l for l in log_lines() if "relist" in l.get("msg", "") or
            l.get("msg") == "watch ERROR event; relisting"]
    check(not gone and relists() == before, "relists %g -> %g; log %r" % (
        before, relists(), gone[:3]))
    # the apiserver's own answer to a watch at that compacted revision: events, no ERROR
    rv = resumed[0]["resourceVersion"]
    raw = kubectl("get", "--raw", "/api/v1/pods?watch=1&resourceVersion=%s&timeoutSeconds=1" % rv)
    types = [json.loads(l)["type"] for l in raw.stdout.splitlines() if l.strip()]
    check(types and "ERROR" not in types, "watch of pods from compacted %s: %r" % (rv, types))


def watch_revisions(since=0):
    """Each kind's last watch as gpuadmit logged it (debug level) from byte offset SINCE:
    {plural: resourceVersion}."""
    out = {}
    for l in log_lines(since):
        if l.get("msg") == "watch" and "kind" in l:
            out[l["kind"]] = l["resourceVersion"]
    return out


def etcd_post(path, body):
    req = urllib.request.Request(ETCD + path, data=json.dumps(body).encode(), method="POST")
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with opener.open(req, timeout=10) as r:
        return json.load(r)


def etcd_compact_all():
    """etcd compacts every revision it has but a new last one (a key outside /registry/ written
    first), through its JSON gateway: afterwards every resourceVersion seen so far is gone."""
    put = etcd_post("/v3/kv/put", {"key": base64.b64encode(b"/gpuadmit-test/revision").decode(),
                                   "value": base64.b64encode(b"x").decode()})
    rev = int(put["header"]["revision"])
    etcd_post("/v3/kv/compaction", {"revision": rev, "physical": True})
    return rev


def test_e_apiserver_restart():
    """An apiserver restart: watches resumed at a resource version its new watch cache no longer
    has get 410 Gone, gpuadmit relists (log and metrics), and the view agrees afterwards. Every
    kind resumes at a revision etcd compacted while the apiserver was down: the cacher's 410 is
    the same for those, its history starting at its new list (k8s.io/apiserver v0.37
    pkg/storage/cacher: CacheDelegator.Watch hands every watch to the cacher, delegator.go)."""
    before = relists()
    kinds = set(watch_revisions())
    sh(CLUSTER, "stop-apiserver", timeout=120)
    # with the apiserver gone, each kind's watch retries at the revision it last saw, which no
    # bookmark can move any more; logged at debug level on every attempt
    at = log_size()
    resume = wait("every kind retrying its watch (%s)" % ", ".join(sorted(kinds)), lambda: (
        lambda r: r if set(r) >= kinds else None)(watch_revisions(at)), limit=60)
    etcd_compact_all()
    check(all(etcd_compacted(rv) for rv in resume.values()),
          "etcd still has a revision the watches resume from: %r" % resume)
    sh(CLUSTER, "control-plane", timeout=120)
    kubectl("-n", "ml", "scale", "rs", "busy", "--replicas=11")
    # watches reconnect in any order: wait for every kind's own relist, not the first
    gone = wait("the 410 relist of every kind at the revision it resumed from", lambda: (
        lambda ls: ls if {l.get("kind") for l in ls} >= kinds else None)([
            l for l in log_lines(at) if l.get("msg") == "relist (410 Gone)" and
            resume.get(l.get("kind")) == l.get("resourceVersion")]), limit=90)
    every = [l for l in log_lines(at) if l.get("msg") == "relist (410 Gone)"]
    check(all("too old resource version" in l.get("message", "") for l in every),
          "a 410 relist without the cacher's message: %r" % every)
    wait("the relists counted", lambda: relists() >= before + len(kinds))
    wait("busy at 11", lambda: (act_as_kubelet("ml", "app=busy"),
                                len(pods("ml", "app=busy")) == 11)[1])
    view_agrees("after the apiserver restart")
    kubectl("-n", "ml", "scale", "rs", "busy", "--replicas=12")
    wait("12 busy pods bound", lambda: len(bound(pods("ml", "app=busy"))) == 12)


def test_e_compaction_without_watch_cache():
    """kube-apiserver --watch-cache=false: every watch is served by etcd itself, and one resumed
    at a revision etcd has compacted fails with etcd's ErrCompacted, which the apiserver sends as
    a 410 ERROR event "The resourceVersion for the provided watch is too old." (k8s.io/apiserver
    v0.37 pkg/storage/etcd3/errors.go, interpretWatchError): gpuadmit relists (log and metrics)
    and the view agrees with kubectl get. The watch cache goes back on afterwards."""
    # gpuadmit as test_e_compaction_... left it: 5 s watches, debug log
    before = relists()
    at = log_size()
    sh(CLUSTER, "restart-apiserver", "--watch-cache=false", timeout=120)
    try:
        scale_busy(11)
        gone = wait("etcd's 410 in gpuadmit's log", lambda: [
            l for l in log_lines(at) if l.get("msg") == "relist (410 Gone)" and
            l.get("message") == "The resourceVersion for the provided watch is too old."],
            limit=90)
        check(all(etcd_compacted(l["resourceVersion"]) for l in gone),
              "etcd's 410 for a revision it still has: %r" % gone)
        wait("the relists counted", lambda: relists() >= before + len(gone))
        view_agrees("after etcd's 410s")
    finally:
        sh(CLUSTER, "restart-apiserver", timeout=120)
    scale_busy(12)
    cluster("gpuadmit-start")
    webhook_live()
    view_agrees("with the watch cache back")


def readyz_status():
    ctx = ssl.create_default_context(cafile=os.path.join(STATE, "webhook", "ca.crt"))
    try:
        with urllib.request.urlopen(GPUADMIT + "/readyz", context=ctx, timeout=5) as r:
            return r.status
    except urllib.error.HTTPError as e:
        return e.code


def test_l_autoscalers_read_with_the_manifests_rbac():
    """gpuadmit with the overlay's ServiceAccount reads Cluster Autoscaler's status ConfigMap
    (the ClusterRole's resourceNames, matched by the list's metadata.name field selector) and
    syncs without Karpenter's CRD, which this cluster does not serve (404)."""
    log = os.path.join(STATE, "logs", "gpuadmit.log")
    with open(log) as f:
        absent = [l for l in f if "optional kind not served (404)" in l and '"nodepools"' in l]
    check(absent, "no log line for the NodePools the cluster does not serve")
    check(readyz_status() == 200, "/readyz without Karpenter: %r" % readyz_status())
    ca_status_install(target=2, max_size=6)
    try:
        def seen():
            a = json.loads(gpuadmit_get("/debug/view")).get("autoscalers", {})
            g = a.get("ConfigMap/kube-system/cluster-autoscaler-status", {}).get("groups", {})
            return g.get(CA_GROUP)
        g = wait("the CA status in gpuadmit's view", seen, limit=30)
        check(g["headroom"] == 4 and g["maxSize"] == 6, "the group as read: %r" % g)
        with open(log) as f:
            refused = [l for l in f if '"configmaps"' in l and ("403" in l or "forbidden" in l)]
        check(not refused, "the ConfigMap refused: %r" % refused[:2])
    finally:
        ca_status_remove()
    wait("the CA status gone from the view",
         lambda: "ConfigMap/kube-system/cluster-autoscaler-status" not in json.loads(
             gpuadmit_get("/debug/view")).get("autoscalers", {}), limit=30)


NODEPOOL_CRD = os.path.join(ROOT, "tests", "cluster", "karpenter", "karpenter.sh_nodepools.yaml")


def test_l_karpenter_nodepool_limit():
    """Karpenter's own NodePool CRD served by the apiserver, and a NodePool with a GPU limit:
    gpuadmit reads it with the manifests' RBAC, and a ReplicaSet that fits once Karpenter
    launches 2 whole nodes is admitted, told so; past the limit it is refused."""
    kubectl("apply", "--server-side", "-f", NODEPOOL_CRD)
    try:
        kubectl("wait", "--for=condition=Established", "crd/nodepools.karpenter.sh",
                "--timeout=60s")
        pool = {"apiVersion": "karpenter.sh/v1", "kind": "NodePool", "metadata": {"name": "gpu"},
                "spec": {"limits": {"cpu": "1000", "nvidia.com/gpu": "20"},
                         "template": {"metadata": {"labels": {"nvidia.com/gpu.present": "true"}},
                                      "spec": {"nodeClassRef": {"group": "karpenter.k8s.aws",
                                                                "kind": "EC2NodeClass",
                                                                "name": "gpu"},
                                               "requirements": [{
                                                   "key": "karpenter.k8s.aws/instance-gpu-count",
                                                   "operator": "In", "values": ["4"]}],
                                               "taints": [{"key": "nvidia.com/gpu",
                                                           "value": "true",
                                                           "effect": "NoSchedule"}]}}}}
        kubectl("apply", "-f", "-", stdin=json.dumps(pool))
        # what its nodes and claims hold, as Karpenter's counter writes it (status subresource)
        kubectl("patch", "nodepool", "gpu", "--subresource=status", "--type=merge", "-p",
                json.dumps({"status": {"resources": {"cpu": "96", "nvidia.com/gpu": "12"}}}))
        # the CRD came after gpuadmit started: its view lists NodePools from the next start
        cluster("gpuadmit-start")
        webhook_live()
        v = json.loads(gpuadmit_get("/debug/view")).get("autoscalers", {})
        check(any("gpu" in k and "NodePool" in k for k in v), "NodePool not in the view: %r" % v)
        # 16 GPUs on the 4 nodes, 12 held by busy (batch-low): 4 fit now, and 20 - 12 = 8 left
        # of the limit, 2 whole 4-GPU nodes
        p = kubectl("apply", "--dry-run=server", "-f", "-",
                    stdin=replicaset("grow", 12, priority="batch-low"))
        check("replicasets ml/grow fits after scale-up: NodePool gpu launches 2 nodes of 4 pods "
              "each (8 nvidia.com/gpu left of its limit of 20); 4 of its 12 more pods fit now"
              in p.stderr,
              "after scale-up: %r" % p.stderr)
        p = kubectl("apply", "--dry-run=server", "-f", "-",
                    stdin=replicaset("grow", 25, priority="batch-low"), ok=False)
        check(p.returncode != 0 and "replicasets ml/grow can never fit: 25 pods at once, at most "
              "24 fit (16 on the eligible nodes" in p.stderr and "NodePool gpu may launch 2 nodes "
              "of 4 pods each (8 nvidia.com/gpu left of its limit of 20)" in p.stderr,
              "past the limit: %r" % p.stderr)
    finally:
        kubectl("delete", "nodepool", "gpu", "--ignore-not-found")
        kubectl("delete", "-f", NODEPOOL_CRD, "--ignore-not-found")
    cluster("gpuadmit-start")
    webhook_live()


def test_m_device_plugin_config():
    """The device plugin's config ConfigMaps, judged at kubectl apply by the real apiserver's
    call: seed 003's is accepted, NVIDIA/k8s-device-plugin#1433's (renameByDefault under flags,
    which the plugin drops without a word) is refused naming its line and column; the same
    broken config in a ConfigMap the rule does not name never reaches gpuadmit (the entry's
    matchConditions), and nothing reaches it with gpuadmit stopped (failurePolicy Ignore)."""
    seed = ("version: v1\nsharing:\n  timeSlicing:\n    resources:\n"
            "      - name: nvidia.com/gpu\n        replicas: 4\n")
    bad = ("version: v1\nflags:\n  migStrategy: none\n  renameByDefault: true\nsharing:\n"
           "  timeSlicing:\n    resources:\n      - name: nvidia.com/gpu\n        replicas: 4\n")

    def cm(ns, name, text):
        return json.dumps({"apiVersion": "v1", "kind": "ConfigMap",
                           "metadata": {"name": name, "namespace": ns}, "data": {"any": text}})

    def reviewed():
        return metric(gpuadmit_get("/metrics"), "gpuadmit_admission_requests_total",
                      endpoint="validate", kind="ConfigMap")
    kubectl("create", "namespace", "gpu-operator", ok=False)
    try:
        before = reviewed()
        kubectl("apply", "-f", "-", stdin=cm("gpu-operator", "time-slicing-config", seed))
        check(reviewed() == before + 1, "seed 003's config not reviewed once: %r -> %r" %
              (before, reviewed()))
        p = kubectl("apply", "-f", "-", stdin=cm("gpu-operator", "time-slicing-config", bad),
                    ok=False)
        check(p.returncode != 0 and "denied the request" in p.stderr and
              "data[any]:4:3: unknown key \"renameByDefault\" in flags: it belongs in "
              "sharing.timeSlicing or sharing.mps" in p.stderr, "#1433: %r" % p.stderr)
        got = kjson("-n", "gpu-operator", "get", "configmap", "time-slicing-config")
        check(got["data"]["any"] == seed, "the refused config was stored: %r" % got["data"])
        # the webhook's view reads it with the service account's RBAC (resourceNames, matched
        # by the list's metadata.name field selector on the real apiserver), every 30 s
        log = os.path.join(STATE, "logs", "gpuadmit.log")

        def read_lines():
            with open(log) as f:
                return [json.loads(l) for l in f if '"deviceplugin-configmaps"' in l]
        wait("the webhook's view holding the config", lambda: [
            e for e in read_lines() if e.get("msg") == "list" and e.get("items", 0) >= 1],
            limit=45)
        check(not [e for e in read_lines() if "forbidden" in e.get("msg", "")],
              "the webhook may not read the config: %r" % read_lines()[-1:])
        # another ConfigMap with the same text is not the rule's, and is never sent
        n = reviewed()
        kubectl("apply", "-f", "-", stdin=cm("ml", "time-slicing-config", bad))
        kubectl("apply", "-f", "-", stdin=cm("gpu-operator", "other-config", bad))
        check(reviewed() == n, "a ConfigMap the rule does not name reached gpuadmit: %r -> %r" %
              (n, reviewed()))
        # with gpuadmit down the apiserver applies it (failurePolicy: Ignore)
        sh(CLUSTER, "gpuadmit-stop")
        try:
            kubectl("apply", "-f", "-", stdin=cm("gpu-operator", "time-slicing-config", bad))
        finally:
            cluster("gpuadmit-start")
            webhook_live()
    finally:
        kubectl("delete", "namespace", "gpu-operator", "--ignore-not-found", "--wait=false")
        kubectl("-n", "ml", "delete", "configmap", "time-slicing-config", "--ignore-not-found")


def test_e_rbac_removed():
    """Without the RBAC for jobs, /readyz stays 503 and the log names the kind; the overlay
    applied again restores it."""
    role = kjson("get", "clusterrole", "gpuadmit-cluster-view")
    role["rules"] = [r for r in role["rules"] if "jobs" not in r.get("resources", [])]
    role["metadata"] = {"name": "gpuadmit-cluster-view"}
    kubectl("replace", "-f", "-", stdin=json.dumps(role))
    log = os.path.join(STATE, "logs", "gpuadmit.log")
    sh(CLUSTER, "gpuadmit-stop")
    # started by hand: gpuadmit-start waits for /readyz, which must not come
    p = subprocess.Popen([CLUSTER, "gpuadmit-start"], env=ENV, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)
    try:
        def named():
            if not os.path.exists(log):
                return False
            with open(log) as f:
                return [l for l in f if '"jobs"' in l and ("403" in l or "forbidden" in l)]
        lines = wait("a log line naming jobs and the refusal", named, limit=30)
        # stays: 503 at every look for 3 s after the refusal
        end = time.time() + 3
        while time.time() < end:
            st = readyz_status()
            check(st == 503, "/readyz %r after the refusal" % st)
    finally:
        p.wait(timeout=60)
    check(lines, "log %r" % lines)
    cluster("install", "enforce")
    cluster("gpuadmit-start")
    check(readyz_status() == 200, "/readyz after the RBAC is back: %r" % readyz_status())
    webhook_live()


# ---------------------------------------------------------------------------------------------
# i. Reinvocation: a MutatingAdmissionPolicy that changes the pod after gpuadmit.

MAP = {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingAdmissionPolicy",
       "metadata": {"name": "count-tolerations"},
       "spec": {"failurePolicy": "Fail", "reinvocationPolicy": "IfNeeded",
                "matchConstraints": {
                    "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "ml"}},
                    "resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
                                       "operations": ["CREATE"], "resources": ["pods"]}]},
                # The apiserver runs policies before webhooks: this one's first call sees the
                # pod before gpuadmit, its second (IfNeeded) gpuadmit's toleration, and changes
                # the pod again, so that gpuadmit is called a second time.
                "mutations": [{"patchType": "ApplyConfiguration", "applyConfiguration": {
                    "expression": "Object{metadata: Object.metadata{annotations: "
                                  "{\"example.com/tolerations\": string(has(object.spec."
                                  "tolerations) ? size(object.spec.tolerations) : 0)}}}"}}]}}
MAPB = {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingAdmissionPolicyBinding",
        "metadata": {"name": "count-tolerations"},
        "spec": {"policyName": "count-tolerations"}}


def test_i_reinvocation():
    """gpuadmit patches, the policy then changes the pod, gpuadmit is called again
    (reinvocationPolicy IfNeeded) and patches nothing; the pod is admitted as patched."""
    kubectl("apply", "-f", "-", stdin=json.dumps(MAP))
    kubectl("apply", "-f", "-", stdin=json.dumps(MAPB))

    def annotated():
        p = kubectl("create", "--dry-run=server", "-o", "json", "-f", "-",
                    stdin=gpu_pod("i-probe"), ok=False)
        return p.returncode == 0 and json.loads(p.stdout)["metadata"].get(
            "annotations", {}).get("example.com/tolerations") == "3"
    wait("the policy in force", annotated)
    m0 = gpuadmit_get("/metrics")
    kubectl("create", "-f", "-", stdin=gpu_pod("i-pod"))
    m1 = gpuadmit_get("/metrics")

    def calls(m, outcome):
        return metric(m, "gpuadmit_admission_requests_total", endpoint="mutate", kind="Pod",
                      operation="CREATE", outcome=outcome)
    check(calls(m1, "patched") - calls(m0, "patched") == 1 and
          calls(m1, "allowed") - calls(m0, "allowed") == 1,
          "mutate calls: patched %+g, allowed %+g" % (calls(m1, "patched") - calls(m0, "patched"),
                                                     calls(m1, "allowed") - calls(m0, "allowed")))
    pod = kjson("-n", "ml", "get", "pod", "i-pod")
    # DefaultTolerationSeconds' two and gpuadmit's
    check(pod["metadata"].get("annotations", {}).get("example.com/tolerations") == "3",
          "annotations %r" % pod["metadata"].get("annotations"))
    check(any(t.get("key") == "nvidia.com/gpu" for t in pod["spec"].get("tolerations", [])) and
          pod["spec"].get("priorityClassName") == "gpu-standard",
          "gpuadmit's patch: %r" % pod["spec"])
    kubectl("-n", "ml", "delete", "pod", "i-pod", "--grace-period=0", "--force")
    kubectl("delete", "mutatingadmissionpolicybinding,mutatingadmissionpolicy",
            "count-tolerations")


# ---------------------------------------------------------------------------------------------
# h. Rotation of gpuadmit's CA while pods are admitted.

def served_cert():
    return ssl.DER_cert_to_PEM_cert(ssl.PEM_cert_to_DER_cert(
        ssl.get_server_certificate(("127.0.0.1", BASE + 944))))


def file_cert(path):
    with open(path) as f:
        text = f.read()
    first = text[:text.index("-----END CERTIFICATE-----") + len("-----END CERTIFICATE-----")]
    return ssl.DER_cert_to_PEM_cert(ssl.PEM_cert_to_DER_cert(first))


def test_h_rotation():
    """gpuadmit certs --rotate, its three steps, with the webhook configurations' caBundle
    updated between them (kubectl apply -k), while a loop has GPU pods admitted (server-side
    dry runs, so that nothing is bound): not one failed admission."""
    certs = os.path.join(STATE, "webhook")
    gpuadmit_bin = os.environ.get("GPUADMIT_BIN", os.path.join(ROOT, "build", "release",
                                                               "gpuadmit"))
    stop = threading.Event()
    results = []

    def loop():
        while not stop.is_set():
            p = kubectl("create", "--dry-run=server", "-o", "json", "-f", "-",
                        stdin=gpu_pod("h-loop"), ok=False)
            ok = p.returncode == 0 and any(t.get("key") == "nvidia.com/gpu" for t in
                                           json.loads(p.stdout)["spec"].get("tolerations", []))
            results.append((ok, p.stderr.strip()))
    t = threading.Thread(target=loop, daemon=True)
    t.start()
    try:
        for step in (1, 2, 3):
            sh(gpuadmit_bin, "certs", "--rotate=%d" % step, "--out", certs)
            if step == 2:
                # gpuadmit re-reads its certificate files when they change
                want = file_cert(os.path.join(certs, "tls.crt"))
                wait("gpuadmit serving the re-issued certificate",
                     lambda: served_cert() == want, limit=30)
            else:
                cluster("install", "enforce")
            # calls with the new state: the apiserver's informer has the new caBundle within
            # about a second; 8 more admissions (some seconds), each after the step
            n = len(results)
            wait("admissions after step %d" % step, lambda: len(results) >= n + 8, limit=60)
    finally:
        stop.set()
        t.join(timeout=60)
    failed = [e for ok, e in results if not ok]
    check(len(results) >= 10 and not failed, "%d admissions, %d failed: %r"
          % (len(results), len(failed), failed[:3]))
    mwc = kjson("get", "mutatingwebhookconfiguration", "gpuadmit")
    with open(os.path.join(certs, "ca.crt"), "rb") as f:
        ca = f.read()
    check(ca.count(b"BEGIN CERTIFICATE") == 1, "ca.crt after the rotation holds %d certificates"
          % ca.count(b"BEGIN CERTIFICATE"))
    check(all(w["clientConfig"]["caBundle"] == base64.b64encode(ca).decode()
              for w in mwc["webhooks"]), "caBundle is not the new CA alone")
    webhook_live()


# ---------------------------------------------------------------------------------------------
# j. What users see: audit annotations in the apiserver's audit log.

def audit_events(name):
    """The audit log's events of the create of pod NAME. The scheduler's bind is a create too,
    of the pods/binding subresource under the same name, without the webhooks' annotations: it
    is left out, whether or not it has been logged yet."""
    events = []
    with open(os.path.join(STATE, "audit.log")) as f:
        for line in f:
            e = json.loads(line)
            ref = e.get("objectRef", {})
            if ref.get("resource") == "pods" and not ref.get("subresource") and \
                    ref.get("name") == name and e.get("verb") == "create" and \
                    e.get("stage") == "ResponseComplete":
                events.append(e)
    return events


def test_j_audit_annotations():
    """The audit overlay (--audit-only): the apiserver's audit log carries gpuadmit's
    annotations, prefixed with the webhook's name, for what a rule would have done."""
    cluster("uninstall")
    cluster("install", "audit")
    cluster("gpuadmit-start", "--audit-only")
    webhook_gone()  # audit-only patches nothing
    p = kubectl("create", "-f", "-", stdin=gpu_pod("j-audit"))
    check("Warning" not in p.stderr, "audit-only sent a warning: %r" % p.stderr)
    events = wait("the audit event of pod j-audit", lambda: audit_events("j-audit"), limit=30)
    ann = events[-1].get("annotations", {})
    keys = [k for k in ann if k.startswith("pods.mutate.gpuadmit.io/")]
    check("pods.mutate.gpuadmit.io/tolerations" in ann, "audit annotations %r" % ann)
    check(keys, "no gpuadmit annotation in %r" % ann)
    kubectl("-n", "ml", "delete", "pod", "j-audit", "--grace-period=0", "--force")
    cluster("uninstall")
    cluster("install", "enforce")
    cluster("gpuadmit-start")
    webhook_live()


# ---------------------------------------------------------------------------------------------
# Every overlay applies: kubectl apply -k, as users install it, against the real apiserver.

def test_every_overlay_applies():
    """kubectl apply -k of every overlay in manifests/overlays succeeds (the cert-manager ones
    with cert-manager's CRDs installed); a second apply changes nothing."""
    overlays = sorted(os.listdir(os.path.join(ROOT, "manifests", "overlays")))
    check(len(overlays) >= 5, "overlays %r" % overlays)
    for o in overlays:
        cluster("uninstall")
        cluster("install", o)
        with open(os.path.join(STATE, "logs", "apply-%s.log" % o)) as f:
            out = f.read()
        for want in ("mutatingwebhookconfiguration.admissionregistration.k8s.io/gpuadmit",
                     "validatingwebhookconfiguration.admissionregistration.k8s.io/gpuadmit",
                     "deployment.apps/gpuadmit", "clusterrole.rbac.authorization.k8s.io/"
                     "gpuadmit-cluster-view"):
            check(want in out, "%s: %r not in kubectl's output:\n%s" % (o, want, out))
        cluster("install", o)
        with open(os.path.join(STATE, "logs", "apply-%s.log" % o)) as f:
            again = f.read()
        # kubectl always sends a PodDisruptionBudget's selector (patchStrategy replace) and so
        # reports it "configured"; the apiserver finds nothing to change (kubectl diff)
        changed = [l for l in again.splitlines() if not l.endswith(" unchanged") and
                   l != "poddisruptionbudget.policy/gpuadmit configured"]
        check(not changed, "%s: a second apply changed %r" % (o, changed))
        p = kubectl("diff", "-k", os.path.join(STATE, "kustomize", o), ok=False)
        check(p.returncode == 0, "%s: kubectl diff -k exit %d:\n%s%s" % (o, p.returncode,
                                                                        p.stdout, p.stderr))
    cluster("uninstall")
    cluster("install", "enforce")
    webhook_live()



# ---------------------------------------------------------------------------------------------
# k. The Helm chart (charts/gpuadmit): its certificate hook's script, then helm install,
#    upgrade and uninstall.

def b64(path):
    with open(path, "rb") as f:
        return base64.b64encode(f.read()).decode()


def certs_job(new, **env):
    """charts/gpuadmit/files/certs-job.sh as the hook Job runs it, with this control plane's
    kubectl on PATH and the admin kubeconfig instead of the Job's ServiceAccount."""
    full = dict(ENV, NAMESPACE="k-certs", SECRET="gpuadmit-tls", WEBHOOKS="k-certs",
                DAYS="365", RENEW_DAYS="30", NEW=new,
                PATH=os.path.dirname(KUBECTL) + os.pathsep + os.environ.get("PATH", ""))
    full.update(env)
    p = subprocess.run(["bash", os.path.join(CHART, "files", "certs-job.sh")],
                       capture_output=True, text=True, env=full, timeout=120)
    check(p.returncode == 0, "certs-job.sh: exit %d\n%s%s" % (p.returncode, p.stdout, p.stderr))
    return p.stdout


def new_certs(name):
    d = os.path.join(STATE, "k-certs", name)
    shutil.rmtree(d, ignore_errors=True)
    sh(os.path.join(ROOT, "build", "release", "gpuadmit"), "certs", "--namespace", "k-certs",
       "--out", d)
    return d


def test_k_chart_certs_job_script():
    """The generated certificates' hook script against the apiserver: it creates the Secret
    and writes its CA into every webhook of both configurations; a second run keeps both; a
    run within renewDays of the end replaces the set and trusts the old CA too; a Secret it
    did not make is never touched; before the install there are no configurations to write."""
    kubectl("create", "namespace", "k-certs")
    # two configurations of their own, whose webhooks are never called (no object has the label)
    hooks = []
    for kind, names in (("MutatingWebhookConfiguration", ["a.k-certs.gpuadmit.io"]),
                        ("ValidatingWebhookConfiguration", ["b.k-certs.gpuadmit.io",
                                                            "c.k-certs.gpuadmit.io"])):
        hooks.append({"apiVersion": "admissionregistration.k8s.io/v1", "kind": kind,
                      "metadata": {"name": "k-certs"},
                      "webhooks": [{"name": n, "admissionReviewVersions": ["v1"],
                                    "sideEffects": "None", "failurePolicy": "Ignore",
                                    "clientConfig": {"url": "https://127.0.0.1:1/x"},
                                    "objectSelector": {"matchExpressions": [
                                        {"key": "k-certs.gpuadmit.io/never", "operator": "Exists"}]},
                                    "rules": [{"apiGroups": [""], "apiVersions": ["v1"],
                                               "resources": ["pods"], "operations": ["CREATE"]}]}
                                   for n in names]})
    out = certs_job(new_certs("absent"), WEBHOOKS="k-certs-absent")
    check("created Secret k-certs/gpuadmit-tls" in out and
          "no mutatingwebhookconfiguration k-certs-absent yet" in out, "first run: %r" % out)
    kubectl("-n", "k-certs", "delete", "secret", "gpuadmit-tls")
    for h in hooks:
        kubectl("create", "-f", "-", stdin=json.dumps(h))

    def secret():
        return kjson("-n", "k-certs", "get", "secret", "gpuadmit-tls")

    def bundles():
        return [w["clientConfig"].get("caBundle") for kind in ("mutatingwebhookconfiguration",
                                                               "validatingwebhookconfiguration")
                for w in kjson("get", kind, "k-certs")["webhooks"]]

    first = new_certs("first")
    out = certs_job(first)
    check("created Secret" in out and "validatingwebhookconfiguration k-certs: caBundle of its "
          "2 webhooks written" in out, "install: %r" % out)
    s1 = secret()
    got = (s1["type"], sorted(s1["data"]), s1["data"]["ca.crt"], s1["data"]["tls.crt"])
    check(got == ("kubernetes.io/tls", ["ca.crt", "tls.crt", "tls.key"], b64(first + "/ca.crt"),
                  b64(first + "/tls.crt")), "the Secret: %r" % (got,))
    left = int(s1["metadata"]["annotations"]["gpuadmit.io/not-after"]) - time.time()
    check(364 * 86400 < left <= 365 * 86400, "not-after in %d s" % left)
    check(bundles() == [b64(first + "/ca.crt")] * 3, "caBundles after the install")

    out = certs_job(new_certs("second"))
    check("kept: 364 days left" in out or "kept: 365 days left" in out, "upgrade: %r" % out)
    check(secret()["data"] == s1["data"], "the kept Secret changed")
    check(bundles() == [s1["data"]["ca.crt"]] * 3, "caBundles after the upgrade")

    third = new_certs("third")
    out = certs_job(third, RENEW_DAYS="400")
    check("renewed Secret" in out, "renewal: %r" % out)
    s3 = secret()
    with open(third + "/ca.crt") as a, open(first + "/ca.crt") as b:
        both = a.read() + b.read()
    got = base64.b64decode(s3["data"]["ca.crt"]).decode()
    check(got == both, "ca.crt after the renewal: the new CA, then the old one: %r" % got)
    check(s3["data"]["tls.crt"] == b64(third + "/tls.crt"), "tls.crt after the renewal")
    check(bundles() == [s3["data"]["ca.crt"]] * 3, "caBundles after the renewal")

    # a Secret of the user's (no annotation) is kept, and its CA written; without a ca.crt
    # there is nothing to write, and the Job fails rather than leave the caBundle behind
    fourth = new_certs("fourth")
    kubectl("-n", "k-certs", "delete", "secret", "gpuadmit-tls")
    kubectl("-n", "k-certs", "create", "secret", "generic", "gpuadmit-tls",
            "--type=kubernetes.io/tls", "--from-file=" + fourth + "/tls.crt",
            "--from-file=" + fourth + "/tls.key", "--from-file=" + fourth + "/ca.crt")
    out = certs_job(first)
    check("was not made by this Job: kept as it is" in out and
          secret()["data"]["tls.crt"] == b64(fourth + "/tls.crt"), "a Secret of the user's: %r" % out)
    check(bundles() == [b64(fourth + "/ca.crt")] * 3, "caBundles from the user's Secret")
    kubectl("-n", "k-certs", "delete", "secret", "gpuadmit-tls")
    kubectl("-n", "k-certs", "create", "secret", "tls", "gpuadmit-tls",
            "--cert=" + fourth + "/tls.crt", "--key=" + fourth + "/tls.key")
    p = subprocess.run(["bash", os.path.join(CHART, "files", "certs-job.sh")],
                       capture_output=True, text=True, timeout=60, env=dict(
                           ENV, NAMESPACE="k-certs", SECRET="gpuadmit-tls", WEBHOOKS="k-certs",
                           DAYS="365", RENEW_DAYS="30", NEW=first,
                           PATH=os.path.dirname(KUBECTL) + os.pathsep + os.environ["PATH"]))
    check(p.returncode != 0 and "has no ca.crt" in p.stderr,
          "a Secret without ca.crt: exit %d %r" % (p.returncode, p.stderr))
    for kind in ("mutatingwebhookconfiguration", "validatingwebhookconfiguration"):
        kubectl("delete", kind, "k-certs")
    kubectl("delete", "namespace", "k-certs", "--wait=false")


def helm_values():
    """The loopback trick of tests/cluster/loopback, as chart values: every webhook calls the
    local gpuadmit, trusting the test CA (a provided certificate)."""
    path = os.path.join(STATE, "helm-loopback.yaml")
    with open(path, "w") as f:
        json.dump({"webhookURL": GPUADMIT, "certificates": {"provided": {
            "caBundle": b64(os.path.join(STATE, "webhook", "ca.crt"))}}}, f)
    return path


def serve_as_released():
    """gpuadmit restarted as the release's Deployment would run it: its policy from the
    release's ConfigMap, and the Deployment's mode flags."""
    dep = kjson("-n", "gpuadmit-system", "get", "deployment", "gpuadmit")
    pod = dep["spec"]["template"]["spec"]
    args = pod["containers"][0]["args"]
    cm = [v["configMap"]["name"] for v in pod["volumes"] if v["name"] == "rules"][0]
    data = kjson("-n", "gpuadmit-system", "get", "configmap", cm)["data"]
    d = os.path.join(STATE, "rules-helm")
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    for name, text in data.items():
        with open(os.path.join(d, name), "w") as f:
            f.write(text)
    cluster("gpuadmit-start", "--rules", d, *[a for a in args if a == "--audit-only"])
    return args


def sneaky_pod(name):
    """A pod that tolerates the GPU taint and asks for no GPU: the gpu-request rule's denial."""
    return json.dumps({"apiVersion": "v1", "kind": "Pod",
                       "metadata": {"name": name, "namespace": "ml"},
                       "spec": {"tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists",
                                                 "effect": "NoSchedule"}],
                                "containers": [{"name": "c", "image": "web:1"}]}})


def delete_namespace(ns):
    """kubectl delete namespace, its pods deleted by force: with no kubelet, the Deployment's
    bound pods would stay Terminating, and the namespace with them."""
    kubectl("delete", "namespace", ns, "--wait=false")

    def gone():
        if kubectl("get", "namespace", ns, ok=False).returncode != 0:
            return True
        kubectl("-n", ns, "delete", "pods", "--all", "--grace-period=0", "--force", ok=False)
        return False
    wait("namespace %s gone" % ns, gone, limit=90)


def webhooks_of(kind):
    return kjson("get", kind, "gpuadmit")["webhooks"]


def test_k_helm_install_upgrade_uninstall():
    """helm install of charts/gpuadmit in audit mode, as its values.yaml says (the namespace
    made first and adopted), in place of the kustomize install: its webhooks call the local
    gpuadmit, which runs as the release's Deployment says, and a GPU-tolerating pod without a
    GPU is audited, not denied. helm upgrade --set mode=enforce: the validating GPU webhooks
    fail closed, the opt-out guard is there, and the same pod is denied. helm uninstall: the
    webhooks and the rest are gone, the Namespace and the PriorityClass kept. Then the
    kustomize install again, for whatever follows."""
    cluster("uninstall")
    delete_namespace("gpuadmit-system")
    kubectl("delete", "clusterrolebinding,clusterrole", "gpuadmit-cluster-view")
    kubectl("delete", "priorityclass", "gpu-standard")
    kubectl("create", "namespace", "gpuadmit-system")
    values = helm_values()
    p = helm("install", "gpuadmit", CHART, "--namespace", "gpuadmit-system", "--take-ownership",
             "--values", values)
    check("STATUS: deployed" in p.stdout and "gpuadmit-system, audit mode" in p.stdout,
          "helm install: %s" % p.stdout)
    ns = kjson("get", "namespace", "gpuadmit-system")["metadata"]
    check(ns["labels"].get("pod-security.kubernetes.io/enforce") == "restricted" and
          ns["annotations"].get("meta.helm.sh/release-name") == "gpuadmit",
          "the adopted Namespace: %r" % ns)
    ca = b64(os.path.join(STATE, "webhook", "ca.crt"))
    for kind, path in (("mutatingwebhookconfiguration", "/mutate"),
                       ("validatingwebhookconfiguration", "/validate")):
        whs = webhooks_of(kind)
        # the validating entries: six for the workload shapes, one for the device plugin's config
        check(len(whs) == (4 if path == "/mutate" else 7), "%s: %d webhooks" % (kind, len(whs)))
        for w in whs:
            got = (w["clientConfig"].get("url"), w["clientConfig"].get("caBundle"),
                   w["failurePolicy"])
            check(got == (GPUADMIT + path, ca, "Ignore"), "%s %s: %r" % (kind, w["name"], got))
    check(kubectl("get", "validatingadmissionpolicy", "gpuadmit-exempt-label",
                  ok=False).returncode != 0, "an opt-out guard in audit mode")
    args = serve_as_released()
    check("--audit-only" in args, "the audit Deployment's args %r" % args)

    def audited():
        name = "k-sneak-%d" % int(time.time() * 1000)
        p = kubectl("create", "-f", "-", stdin=sneaky_pod(name), ok=False)
        check(p.returncode == 0, "audit mode refused the pod: %s" % p.stderr)
        events = wait("the audit event of " + name, lambda: audit_events(name), limit=30)
        kubectl("-n", "ml", "delete", "pod", name, "--grace-period=0", "--force")
        ann = events[-1].get("annotations", {})
        return ann.get("pods.validate.gpuadmit.io/gpu-request")
    # until the apiserver's informer has the new configurations
    verdict = wait("the audit annotation pods.validate.gpuadmit.io/gpu-request", audited)
    check("deny" in verdict, "the audited verdict: %r" % verdict)

    p = helm("upgrade", "gpuadmit", CHART, "--namespace", "gpuadmit-system", "--reuse-values",
             "--set", "mode=enforce")
    check("STATUS: deployed" in p.stdout and "REVISION: 2" in p.stdout, "helm upgrade: %s" % p.stdout)
    fail = {w["name"] for w in webhooks_of("validatingwebhookconfiguration")
            if w["failurePolicy"] == "Fail"}
    check(fail == {"pods.validate.gpuadmit.io", "ephemeral.validate.gpuadmit.io",
                   "workloads.validate.gpuadmit.io", "cronjobs.validate.gpuadmit.io"},
          "failurePolicy Fail on %r" % sorted(fail))
    check(all(w["failurePolicy"] == "Ignore" for w in webhooks_of("mutatingwebhookconfiguration")),
          "a mutating webhook fails closed")
    kubectl("get", "validatingadmissionpolicy,validatingadmissionpolicybinding",
            "gpuadmit-exempt-label")
    args = serve_as_released()
    check("--audit-only" not in args, "the enforce Deployment's args %r" % args)
    webhook_live()
    p = kubectl("create", "-f", "-", stdin=sneaky_pod("k-sneak"), ok=False)
    check(p.returncode != 0 and 'admission webhook "pods.validate.gpuadmit.io" denied' in p.stderr
          and "[gpu-request]" in p.stderr, "enforce mode: exit %d, %r" % (p.returncode, p.stderr))

    p = helm("uninstall", "gpuadmit", "--namespace", "gpuadmit-system")
    check("uninstalled" in p.stdout, "helm uninstall: %s%s" % (p.stdout, p.stderr))
    for what in ("mutatingwebhookconfiguration/gpuadmit", "validatingwebhookconfiguration/gpuadmit",
                 "validatingadmissionpolicy/gpuadmit-exempt-label",
                 "clusterrole/gpuadmit-cluster-view"):
        check(kubectl("get", what, ok=False).returncode != 0, what + " left by helm uninstall")
    kubectl("get", "namespace/gpuadmit-system", "priorityclass/gpu-standard")
    kubectl("-n", "gpuadmit-system", "delete", "pods", "--all", "--grace-period=0", "--force")
    webhook_gone()
    check(not helm("list", "--all-namespaces", "-q").stdout.strip(), "a release is left")
    cluster("install", "enforce")
    cluster("gpuadmit-start")
    webhook_live()

# ---------------------------------------------------------------------------------------------

TESTS = [
    test_a_scheduler_without_gpuadmit,
    test_a_explain_seed_benchmark,
    test_a_install_enforce,
    test_a_warning_default_policy,
    test_a_deny_and_dry_run,
    test_a_scale_past_capacity,
    test_a_hpa_warning,
    test_f_enforce_fails_closed_only_for_gpu_pods,
    test_f_pods_without_gpus_never_reach_gpuadmit,
    test_f_audit_fails_open,
    test_g_policy_compiles,
    test_g_opt_out_label,
    test_b_default_priority_class,
    test_b_preemption,
    test_c_seed003_time_sliced,
    test_c_mixed_pools,
    test_d_device_plugin_restart,
    test_e_view_after_changes,
    test_e_compaction_served_by_watch_cache,
    test_e_apiserver_restart,
    test_e_compaction_without_watch_cache,
    test_l_autoscalers_read_with_the_manifests_rbac,
    test_l_karpenter_nodepool_limit,
    test_m_device_plugin_config,
    test_e_rbac_removed,
    test_i_reinvocation,
    test_h_rotation,
    test_j_audit_annotations,
    test_every_overlay_applies,
    test_k_chart_certs_job_script,
    test_k_helm_install_upgrade_uninstall,
]


def main():
    global KUBECTL, HELM
    state = {"passed": 0, "failed": 0}

    def dog():
        sys.stdout.write("not ok - watchdog: over %d s\n" % LIMIT_S)
        subprocess.run([CLUSTER, "down"], env=ENV)
        sys.stdout.write("%d passed, %d failed\n" % (state["passed"], state["failed"] + 1))
        sys.stdout.flush()
        os._exit(1)

    # The binaries first, with their output shown: on a machine where they were never built
    # this is a cold Go build of several minutes, which the scenarios' watchdog must not count
    # (helm too: scripts/helm-binary.sh).
    r = subprocess.run([os.path.join(ROOT, "scripts", "k8s-binaries.sh")], stdout=subprocess.PIPE,
                       timeout=7200)
    if r.returncode != 0:
        sys.stdout.write("not ok - the Kubernetes binaries (scripts/k8s-binaries.sh exit %d)\n"
                         "0 passed, 1 failed\n" % r.returncode)
        return 1
    KUBECTL = os.path.join(r.stdout.decode().strip(), "kubectl")
    r = subprocess.run([os.path.join(ROOT, "scripts", "helm-binary.sh")], stdout=subprocess.PIPE,
                       timeout=3600)
    if r.returncode != 0:
        sys.stdout.write("not ok - helm (scripts/helm-binary.sh exit %d)\n"
                         "0 passed, 1 failed\n" % r.returncode)
        return 1
    HELM = r.stdout.decode().strip()

    # SIGTERM or SIGHUP (CI cancelled, a terminal closed) unwind like Ctrl-C, through the
    # finally below that stops every daemon: they run in sessions of their own and would
    # outlive this process otherwise
    def stop(signum, frame):
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGHUP, stop)
    timer = threading.Timer(LIMIT_S, dog)
    timer.daemon = True
    timer.start()
    start = time.time()
    # a cold start: nothing of an earlier run
    cluster("down")
    shutil.rmtree(STATE, ignore_errors=True)
    try:
        cluster("control-plane")
        cluster("nodes", "seed-000")
        sys.stdout.write("# control plane and nodes up in %.0f s\n" % (time.time() - start))
        setup_seed000()
        only = os.environ.get("CLUSTER_TESTS", "").split()
        unknown = set(only) - {fn.__name__ for fn in TESTS}
        if unknown:
            raise Fail("CLUSTER_TESTS names no scenario %s" % ", ".join(sorted(unknown)))
        for fn in TESTS:
            if only and fn.__name__ not in only:
                continue
            try:
                fn()
                state["passed"] += 1
                sys.stdout.write("ok - %s\n" % fn.__name__)
            except Fail as e:
                state["failed"] += 1
                sys.stdout.write("not ok - %s: %s\n" % (fn.__name__, e))
            except Exception as e:  # noqa: BLE001 - a test's crash is a failure, not the end
                state["failed"] += 1
                sys.stdout.write("not ok - %s: %s: %s\n%s" % (fn.__name__, type(e).__name__, e,
                                                               traceback.format_exc()))
            sys.stdout.flush()
    except Fail as e:
        state["failed"] += 1
        sys.stdout.write("not ok - setup: %s\n" % e)
    except Exception as e:  # noqa: BLE001 - a crash in the setup still ends with the counts
        state["failed"] += 1
        sys.stdout.write("not ok - setup: %s: %s\n%s" % (type(e).__name__, e,
                                                        traceback.format_exc()))
    finally:
        if os.environ.get("KEEP_CLUSTER", "") in ("", "0"):
            subprocess.run([CLUSTER, "down"], env=ENV)
    timer.cancel()
    sys.stdout.write("# %.0f s\n%d passed, %d failed\n" % (time.time() - start, state["passed"],
                                                           state["failed"]))
    return 1 if state["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
