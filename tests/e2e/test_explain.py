#!/usr/bin/env python3
"""End-to-end tests of gpuadmit explain (the command, on snapshot files) and of what the server
says of Pending GPU pods: the gpuadmit_pending_gpu_pods gauge and GET /debug/explain, over TLS.

Run: GPUADMIT_BIN=build/release/gpuadmit python3 tests/e2e/test_explain.py

The snapshots are tests/data/snapshots/: drain.json (gpu-3 cordoned, the 4 pods evicted from it
Pending, every other GPU busy) is written by hand; seed-000-pending.json was listed from a real
control plane (make cluster-capture), where kube-scheduler bound 4 of the 8 pods of the seed's
ReplicaSet and wrote the PodScheduled condition of the other 4. Standard library only.
"""
import http.client
import json
import os
import ssl
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, HERE)
from common import (SERVICE_DNS, SLOW, ServerProcess, check, eq, make_certs,  # noqa: E402
                    run_suite, t, tls_connect)

BIN = os.path.abspath(os.environ.get("GPUADMIT_BIN", os.path.join(ROOT, "build/release/gpuadmit")))
SNAP = os.path.join(ROOT, "tests/data/snapshots")
DRAIN = os.path.join(SNAP, "drain.json")
STALL = os.path.join(SNAP, "stall.json")
SEED_PENDING = os.path.join(SNAP, "seed-000-pending.json")
PLUGIN_CONFIG_MISSING = os.path.join(SNAP, "plugin-config-missing.json")
DEFAULT_RULES = os.path.join(ROOT, "rules")
SUITE_LIMIT_S = 120 if SLOW else 60
CODES = ["scheduling-gated", "other-scheduler", "larger-than-any-node", "shared-request-gt-one",
         "device-plugin-config-missing", "insufficient", "device-plugin-down", "unhealthy-gpus",
         "selector-mismatch", "untolerated-taint", "node-not-ready", "node-unschedulable",
         "preemption-possible", "no-priority-class", "node-group-at-max", "autoscaler-backoff",
         "nodepool-limit"]


class E:
    work = None


def explain(*args):
    p = subprocess.run([BIN, "explain", *args], capture_output=True, text=True, timeout=t(30))
    return p.returncode, p.stdout, p.stderr


def explain_json(*args):
    rc, out, err = explain(*args, "-o", "json")
    check(rc in (0, 1), "explain %s: exit %d: %s" % (" ".join(args), rc, err))
    return rc, json.loads(out)


def codes_of(pod):
    return [r["code"] for r in pod["reasons"]]


def test_drain_text():
    rc, out, err = explain("--cluster-snapshot", DRAIN)
    eq(rc, 1, "exit code with Pending pods (stderr %r)" % err)
    check(out.startswith("4 of 16 GPU pods of ReplicaSet ml/trainer-7f9 are Pending "
                         "(Deployment ml/trainer): trainer-7f9-12, trainer-7f9-13, "
                         "trainer-7f9-14, trainer-7f9-15\n"), "header:\n" + out)
    # the scheduler's condition quoted as the pod carries it, then the replay
    check("  kube-scheduler (Unschedulable): 0/5 nodes are available: 4 Insufficient "
          "nvidia.com/gpu.\n" in out, out)
    check("  insufficient: the pod asks for 1 nvidia.com/gpu; 3 nodes it may go to have too few "
          "free: gpu-0 0/4 free, gpu-1 0/4 free, gpu-2 0/4 free\n" in out, out)
    check("  node-unschedulable: 1 node is cordoned (spec.unschedulable): gpu-3\n" in out, out)
    eq(out.count("insufficient:"), 1, "the four pods of one owner and one story, told once")


def test_drain_json():
    rc, doc = explain_json("--cluster-snapshot", DRAIN)
    eq(rc, 1, "exit code")
    eq([p["name"] for p in doc["pods"]],
       ["trainer-7f9-12", "trainer-7f9-13", "trainer-7f9-14", "trainer-7f9-15"], "pods")
    p = doc["pods"][0]
    eq(p["namespace"], "ml", "namespace")
    eq(p["owner"], {"kind": "ReplicaSet", "name": "trainer-7f9", "deployment": "trainer",
                    "pods": 16}, "owner")
    eq(codes_of(p), ["insufficient", "selector-mismatch", "node-unschedulable"], "codes")
    eq(p["reasons"][0]["nodes"], ["gpu-0", "gpu-1", "gpu-2"], "insufficient's nodes")
    eq(p["reasons"][2]["nodes"], ["gpu-3"], "the cordoned node")
    eq(p["fits"], [], "no node with room")
    eq(doc["notPending"], [], "notPending")
    eq(doc["notFound"], [], "notFound")


# Seed 003's remedy gone wrong: the nodes pick config tesla-t4 (nvidia.com/device-plugin.config),
# the GPU Operator's ConfigMap has only t4, so the plugin's config manager exits ("specified config
# tesla-t4 does not exist": NVIDIA/k8s-device-plugin cmd/config-manager/main.go) and the plugin
# keeps advertising 1 GPU a node.
def test_device_plugin_config_missing():
    rc, doc = explain_json("--cluster-snapshot", PLUGIN_CONFIG_MISSING)
    eq(rc, 1, "exit code")
    eq([p["name"] for p in doc["pods"]], ["bench-5d8-2", "bench-5d8-3"], "pods")
    p = doc["pods"][0]
    eq(codes_of(p), ["device-plugin-config-missing", "insufficient"], "codes")
    r = p["reasons"][0]
    eq(r["nodes"], ["t4-0", "t4-1"], "the nodes whose key is missing")
    check("nvidia.com/device-plugin.config=tesla-t4" in r["message"] and
          "gpu-operator/time-slicing-config: t4" in r["message"], r["message"])
    # near miss: a policy (-r) that names the snapshot's other ConfigMap, which has the key
    pol = os.path.join(E.work, "dpc-ml.yaml")
    with open(pol, "w") as f:
        f.write("apiVersion: gpuadmit.io/v1alpha1\nkind: GPUPolicy\nmetadata: {name: p}\n"
                "spec:\n  rules:\n  - name: dpc\n    type: device-plugin-config\n"
                "    configMaps: [{namespace: ml, name: unrelated}]\n")
    rc, doc = explain_json("--cluster-snapshot", PLUGIN_CONFIG_MISSING, "-r", pol)
    eq(codes_of(doc["pods"][0]), ["insufficient"], "codes with the policy's ConfigMap")


# kube-scheduler's per-node reasons (pkg/scheduler/framework/plugins: noderesources/fit.go,
# nodeaffinity, tainttoleration, nodeunschedulable) and the code explain gives the same nodes
SCHEDULER_REASONS = (("Insufficient ", "insufficient"),
                     ("node(s) didn't match Pod's node affinity/selector", "selector-mismatch"),
                     ("untolerated taint", "untolerated-taint"),
                     ("node(s) were unschedulable", "node-unschedulable"))


def scheduler_counts(message):
    """{code: nodes} from a FitError message, "0/5 nodes are available: 1 node(s) didn't match
    ..., 4 Insufficient nvidia.com/gpu. preemption: ..." (framework/types.go)."""
    head = message.split(": ", 1)[1].split(". preemption:")[0].rstrip(".")
    out = {}
    for part in head.split(", "):
        n, text = part.split(" ", 1)
        for words, code in SCHEDULER_REASONS:
            if words in text:
                out[code] = out.get(code, 0) + int(n)
    return out


def test_seed_000_pending():
    """The seed's benchmark on a real control plane: 8 one-GPU pods without a class after the
    12 busy pods at batch-low; kube-scheduler bound 4 and left 4 Pending."""
    with open(SEED_PENDING) as f:
        snap = json.load(f)
    pending = [p for p in snap["items"] if p["kind"] == "Pod" and
               p["metadata"]["name"].startswith("benchmark-rs-") and not p["spec"].get("nodeName")]
    eq(len(pending), 4, "Pending pods in the capture")
    cond = [c for c in pending[0]["status"]["conditions"] if c["type"] == "PodScheduled"][0]
    rc, out, err = explain("--cluster-snapshot", SEED_PENDING)
    eq(rc, 1, "exit code (stderr %r)" % err)
    check(out.startswith("4 of 8 GPU pods of ReplicaSet ml/benchmark-rs are Pending: "), out)
    check("  kube-scheduler (Unschedulable): %s\n" % cond["message"] in out,
          "the scheduler's own message, verbatim:\n" + out)
    check("  insufficient: the pod asks for 1 nvidia.com/gpu; 4 nodes it may go to have too few "
          "free: gpu-0 0/4 free, gpu-1 0/4 free, gpu-2 0/4 free, gpu-3 0/4 free\n" in out, out)
    check("  no-priority-class: the pod names no PriorityClass (priority 0), so it preempts "
          "nothing; 12 nvidia.com/gpu on 4 nodes are held by pods below PriorityClass "
          "gpu-standard (100000) (12 in namespace ml at priority 1000 (batch-low)): with "
          "priorityClassName: gpu-standard it would preempt them\n" in out, out)
    rc, doc = explain_json("--cluster-snapshot", SEED_PENDING, "-n", "ml", "rs/benchmark-rs")
    eq(sorted(p["name"] for p in doc["pods"]),
       sorted(p["metadata"]["name"] for p in pending), "the Pending pods, by name")
    for p in doc["pods"]:
        eq(p["scheduler"], {"reason": "Unschedulable", "message": cond["message"]}, "condition")
        # the replay agrees with kube-scheduler node for node
        got = {r["code"]: len(r["nodes"]) for r in p["reasons"]
               if r["code"] in dict((c, 1) for _, c in SCHEDULER_REASONS)}
        eq(got, scheduler_counts(cond["message"]), "nodes per reason, against the scheduler's")
        eq(p["fits"], [], "no node with room")


def test_node_group_at_max():
    """eks-at-max.json: an EKS managed node group (ASG eks-gpu-UUID) of two full GPU nodes at
    its maxSize, by Cluster Autoscaler's YAML status: the group is why the pods wait, in the
    command, the gauge, and gpuadmit capacity's headroom."""
    snap = os.path.join(SNAP, "eks-at-max.json")
    rc, doc = explain_json("--cluster-snapshot", snap)
    eq(rc, 1, "exit code")
    for p in doc["pods"]:
        r = p["reasons"][0]
        eq(r["code"], "node-group-at-max", "primary reason of %s" % p["name"])
        eq(r["nodes"], ["gpu-a", "gpu-b"], "the group's nodes")
        check("node group eks-gpu-3ec8e5b6-24f7-8d73-4f5e-aa6e0c3f8d11, which could hold the pod, "
              "is at its max size (2 of maxSize 2)" in r["message"], r["message"])
    with Server("--cluster-snapshot", snap) as s:
        g = pending_gauge(get(s.port, "/metrics")[1].decode())
        eq(g["node-group-at-max"], 2, "the gauge, by primary reason")
    p = subprocess.run([BIN, "capacity", "--cluster-snapshot", snap, "-r", DEFAULT_RULES],
                       capture_output=True, text=True, timeout=t(30))
    check("  node group eks-gpu-3ec8e5b6-24f7-8d73-4f5e-aa6e0c3f8d11: 2 of max 2, headroom 0 "
          "nodes, scale-up NoActivity\n" in p.stdout, p.stdout + p.stderr)


def test_names_and_namespace():
    rc, doc = explain_json("--cluster-snapshot", DRAIN, "-n", "ml", "deployment/trainer")
    eq(rc, 1, "a Deployment's Pending pods")
    eq(len(doc["pods"]), 4, "the Deployment's pods, through its ReplicaSet")
    rc, doc = explain_json("--cluster-snapshot", DRAIN, "-n", "batch")
    eq((rc, doc["pods"]), (0, []), "no Pending pod in namespace batch")
    rc, doc = explain_json("--cluster-snapshot", DRAIN, "pod/trainer-7f9-0")
    eq(rc, 0, "a bound pod is not Pending")
    eq(doc["notPending"][0]["message"], "pod ml/trainer-7f9-0 is bound to node gpu-0",
       "what is said of it")
    rc, out, err = explain("--cluster-snapshot", DRAIN, "rs/nothing")
    eq(rc, 2, "a name the view holds nothing of")
    check("rs/nothing: the view holds no GPU pod or GPU workload of that name" in err, err)
    rc, out, err = explain("--cluster-snapshot", DRAIN, "cronjob/x")
    eq(rc, 2, "a kind explain does not take")
    check("cronjob/x: not a kind gpuadmit explains" in err, err)


def test_pods_of_no_controller_told_together():
    rc, out, err = explain("--cluster-snapshot", os.path.join(SNAP, "pending.json"))
    eq(rc, 1, "exit code (stderr %r)" % err)
    check(out.startswith("4 pods of no controller in namespace batch are Pending: queued-0, "
                         "queued-1, queued-2, queued-3\n"), out)
    check("  the view finds room on gpu-3: " in out, out)
    eq(out.count("kube-scheduler ("), 1, "one block for four pods of one story")


def test_nothing_pending():
    rc, out, err = explain("--cluster-snapshot", STALL)
    eq((rc, out), (0, "no GPU pod is Pending\n"), "stall.json (stderr %r)" % err)


def test_usage_errors():
    for args, want in ((["--cluster-snapshot", DRAIN, "--kubeconfig", "x"],
                        "give one of --cluster-snapshot and --kubeconfig"),
                       ([], "give one of --cluster-snapshot and --kubeconfig"),
                       (["--cluster-snapshot", DRAIN, "-o", "yaml"], "-o takes text or json"),
                       (["--cluster-snapshot", os.path.join(E.work, "missing.json")],
                        "missing.json"),
                       (["--bogus"], "unknown option")):
        rc, out, err = explain(*args)
        eq(rc, 2, "exit code of %r" % args)
        check(want in err, "%r: stderr %r lacks %r" % (args, err, want))
        eq(out, "", "nothing on stdout for %r" % args)
    rc, out, err = explain("--help")
    eq(rc, 0, "--help")
    check("Reason codes:" in out, out)


def test_broken_snapshot():
    path = os.path.join(E.work, "broken.json")
    with open(path, "w") as f:
        f.write('{"kind": "List", "items": [{"kind": "Pod", "metadata": ')
    rc, out, err = explain("--cluster-snapshot", path)
    eq(rc, 2, "a snapshot that does not parse")
    check("broken.json" in err, err)


class Server(ServerProcess):
    def __init__(self, *extra):
        self.log_path = os.path.join(E.work, "srv-%d.log" % time.monotonic_ns())
        self.args = [BIN, "serve", "--listen", "127.0.0.1:0", "--tls-cert", E.crt, "--tls-key",
                     E.key, "--rules", DEFAULT_RULES, "--shutdown-grace", "5"] + list(extra)

    def __enter__(self):
        return self.launch()

    def __exit__(self, exc_type, exc, tb):
        rc = self.stop(t(10))
        if exc_type is None:
            self.check_clean_exit(rc)
        return False


def get(port, path):
    ctx = ssl.create_default_context(cafile=E.ca)
    c = http.client.HTTPSConnection(SERVICE_DNS, port, context=ctx, timeout=t(10))
    c.sock = tls_connect(port, ctx, t(10))
    try:
        c.request("GET", path)
        r = c.getresponse()
        return r.status, r.read()
    finally:
        c.close()


def pending_gauge(text):
    out = {}
    for line in text.splitlines():
        if line.startswith("gpuadmit_pending_gpu_pods{"):
            key, value = line.rsplit(" ", 1)
            out[key[len('gpuadmit_pending_gpu_pods{reason="'):-2]] = int(value)
    return out


def test_server_gauge_and_debug_explain():
    with Server("--cluster-snapshot", DRAIN, "--debug-endpoints") as s:
        status, body = get(s.port, "/metrics")
        eq(status, 200, "/metrics")
        g = pending_gauge(body.decode())
        eq(sorted(g), sorted(CODES + ["unexplained", "not-judged"]), "every code from the start")
        eq(g["insufficient"], 4, "the 4 evicted pods, by their first reason")
        eq(sum(g.values()), 4, "each Pending GPU pod counted once")
        status, body = get(s.port, "/debug/explain?namespace=ml&name=rs/trainer-7f9")
        eq(status, 200, "/debug/explain (%r)" % body[:200])
        doc = json.loads(body)
        eq(len(doc["pods"]), 4, "the ReplicaSet's Pending pods")
        # what the command says, byte for byte: one judgement
        rc, cli = explain_json("--cluster-snapshot", DRAIN, "-n", "ml", "rs/trainer-7f9")
        eq(doc, cli, "/debug/explain and gpuadmit explain -o json")
        status, body = get(s.port, "/debug/explain?name=cronjob/x")
        eq(status, 400, "an unknown kind (%r)" % body[:200])
        check(b"not a kind gpuadmit explains" in body, body[:300])
        status, body = get(s.port, "/debug/explain?namespace=batch")
        eq((status, json.loads(body)["pods"]), (200, []), "nothing Pending in batch")
    with Server("--cluster-snapshot", STALL, "--debug-endpoints") as s:
        g = pending_gauge(get(s.port, "/metrics")[1].decode())
        eq(sum(g.values()), 0, "nothing Pending: every code at 0")
        eq(len(g), len(CODES) + 2, "and every code present")
    with Server("--cluster-snapshot", DRAIN) as s:
        status, body = get(s.port, "/debug/explain")
        eq(status, 404, "without --debug-endpoints")
        check(b"--debug-endpoints" in body, body[:300])


def setup(work):
    E.work = work
    E.ca, E.crt, E.key = make_certs(os.path.join(work, "pki"))


TESTS = [test_seed_000_pending, test_node_group_at_max, test_drain_text, test_drain_json,
         test_device_plugin_config_missing, test_names_and_namespace,
         test_pods_of_no_controller_told_together, test_nothing_pending,
         test_usage_errors, test_broken_snapshot, test_server_gauge_and_debug_explain]

if __name__ == "__main__":
    sys.exit(run_suite("e2e-explain", TESTS, SUITE_LIMIT_S, setup))
