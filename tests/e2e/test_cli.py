#!/usr/bin/env python3
"""End-to-end tests of the offline commands: gpuadmit check, gpuadmit test and gpuadmit
capacity, running the real binary on the shipped policy, examples, snapshots and manifests.
Standard library and python3-yaml.

Run: GPUADMIT_BIN=build/release/gpuadmit python3 tests/e2e/test_cli.py
"""
import json
import os
import re
import subprocess
import sys

import yaml  # noqa: E402 (python3-yaml)

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, HERE)
import fake_apiserver  # noqa: E402
from common import (SLOW, check, check_no_sanitizer_report, eq, make_certs,  # noqa: E402
                    run_suite, t)

BIN = os.path.abspath(os.environ.get("GPUADMIT_BIN", os.path.join(ROOT, "build/release/gpuadmit")))
STALL = os.path.join(ROOT, "tests/data/snapshots/stall.json")
MANIFESTS = os.path.join(ROOT, "tests/data/manifests")
RULES = os.path.join(ROOT, "rules")
EKS = os.path.join(ROOT, "rules/examples/eks-time-sliced-t4.yaml")


class E:
    work = None


def run(*args, stdin=None):
    """Runs the binary from the project folder; returns (exit code, stdout, stderr)."""
    r = subprocess.run([BIN] + list(args), input=stdin, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, cwd=ROOT, timeout=t(30))
    out, err = r.stdout.decode(), r.stderr.decode()
    check_no_sanitizer_report(err, "gpuadmit %s's stderr" % args[0])
    return r.returncode, out, err


def expect(rc, out, err, code, *lines):
    """The exit code, and each line as a whole line of stdout."""
    check(rc == code, "exit code %d, expected %d\nstdout:\n%s\nstderr:\n%s" % (rc, code, out, err))
    have = [l.rstrip() for l in out.splitlines()]
    for line in lines:
        check(line in have, "no line %r in:\n%s" % (line, out))


def deny_policy():
    """The default policy with available: Deny, in a temp directory."""
    d = os.path.join(E.work, "deny")
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(RULES, "default.yaml")) as f:
        text = f.read()
    check("available: Warn" in text, "the default policy lost its capacity rule")
    with open(os.path.join(d, "default.yaml"), "w") as f:
        f.write(text.replace("available: Warn", "available: Deny"))
    return d


TESTS = []


def test(fn):
    TESTS.append(fn)
    return fn


@test
def check_stall_warns_under_the_default_policy():
    rc, out, err = run("check", "--cluster-snapshot", STALL,
                       "tests/data/manifests/stall-replicaset.yaml")
    expect(rc, out, err, 0,
           "tests/data/manifests/stall-replicaset.yaml:3: ReplicaSet ml/stall: allowed, "
           "with 1 warning",
           "  warning: gpuadmit [capacity]: replicasets ml/stall: only 4 of 8 more pods fit now, "
           "the rest will wait Pending",
           "  gpu-request      pass",
           "1 object: 1 allowed, 0 patched, 0 denied, 0 not judged")
    check(any(l.startswith("  capacity         warn   replicasets ml/stall: only 4 of 8")
              for l in out.splitlines()), "no capacity rule line:\n" + out)


@test
def check_stall_denied_with_available_deny():
    rc, out, err = run("check", "-r", deny_policy(), "--cluster-snapshot", STALL,
                       "tests/data/manifests/stall-replicaset.yaml")
    expect(rc, out, err, 1,
           "tests/data/manifests/stall-replicaset.yaml:3: ReplicaSet ml/stall: denied",
           "1 object: 0 allowed, 0 patched, 1 denied, 0 not judged")
    check(any(l.startswith("  denied: gpuadmit: ReplicaSet ml/stall [capacity] replicasets "
                           "ml/stall: only 4 of 8 more pods fit now") for l in out.splitlines()),
          "no denial line:\n" + out)
    # the same as JSON, from standard input
    with open(os.path.join(MANIFESTS, "stall-replicaset.yaml"), "rb") as f:
        rc, out, err = run("check", "-r", deny_policy(), "--cluster-snapshot", STALL, "-o",
                           "json", "-", stdin=f.read())
    eq(rc, 1, "exit code of -o json")
    doc = json.loads(out)
    eq(doc["summary"], {"allowed": 0, "patched": 0, "denied": 1, "notJudged": 0, "errors": 0,
                        "failing": 1},
       "summary")
    o = doc["objects"][0]
    eq((o["file"], o["document"], o["line"], o["decision"]), ("<stdin>", 1, 3, "denied"),
       "object")
    eq([(r["rule"], r["outcome"]) for r in o["rules"]],
       [("gpu-request", "pass"), ("priority-class", "pass"), ("tolerations", "pass"),
        ("node-selector", "pass"), ("capacity", "deny"), ("device-plugin-config", "skip")],
       "rules")
    check("object" not in o, "the object without --show-object")
    check(doc["capacityChecked"] is True, "capacityChecked")


@test
def check_eks_deployment_gets_toleration_and_selector():
    rc, out, err = run("check", "-r", EKS, "tests/data/manifests/eks-deployment.yaml")
    expect(rc, out, err, 0,
           "note: no --cluster-snapshot: GPU capacity is not checked",
           "tests/data/manifests/eks-deployment.yaml:3: Deployment ml/inference: patched",
           "  tolerations      patch  added tolerations for nvidia.com/gpu:NoSchedule",
           "  node-selector    patch  added nodeSelector nvidia.com/gpu.present=true",
           "    + /spec/template/spec/tolerations [{key: nvidia.com/gpu, operator: Exists, "
           "effect: NoSchedule}]",
           "    + /spec/template/spec/nodeSelector {nvidia.com/gpu.present: \"true\"}",
           "1 object: 0 allowed, 1 patched, 0 denied, 0 not judged")
    rc, out, err = run("check", "-r", EKS, "-o", "json", "--show-object",
                       "tests/data/manifests/eks-deployment.yaml")
    eq(rc, 0, "exit code")
    o = json.loads(out)["objects"][0]
    spec = o["object"]["spec"]["template"]["spec"]
    eq(spec["tolerations"], [{"key": "nvidia.com/gpu", "operator": "Exists",
                              "effect": "NoSchedule"}], "patched tolerations")
    eq(spec["nodeSelector"], {"nvidia.com/gpu.present": "true"}, "patched selector")
    eq(len(o["patch"]), 3, "patch operations")
    check("reinvocation" not in o, "the patched object is stable on reinvocation")


@test
def check_clean_manifest_exits_0():
    rc, out, err = run("check", "--cluster-snapshot", STALL, "tests/data/manifests/clean.yaml")
    expect(rc, out, err, 0,
           "tests/data/manifests/clean.yaml:3: Deployment ml/trainer: allowed",
           "tests/data/manifests/clean.yaml:28: Service ml/trainer: not judged",
           "2 objects: 1 allowed, 0 patched, 0 denied, 1 not judged")
    eq(err, "", "stderr")


def snapshot_without(kind):
    """stall.json without its objects of kind: a `kubectl get` that was not asked for them."""
    with open(STALL) as f:
        doc = json.load(f)
    doc["items"] = [o for o in doc["items"] if o["kind"] != kind]
    path = os.path.join(E.work, "stall-without-%s.json" % kind.lower())
    with open(path, "w") as f:
        json.dump(doc, f)
    return path


@test
def check_snapshot_without_priority_classes_says_so():
    """A snapshot listed without priorityclasses. Every cluster has PriorityClasses
    (kube-apiserver creates system-node-critical and system-cluster-critical at start,
    AddSystemPriorityClasses in pkg/registry/scheduling/rest/storage_scheduling.go), so the
    view is incomplete: one warning however many objects are judged, naming the kind and the
    rules that read it, and the class the ReplicaSet names (batch-low, which stall.json has)
    denied as unknown with the reason. The whole snapshot admits it."""
    snap = snapshot_without("PriorityClass")
    stall_rs = "tests/data/manifests/stall-replicaset.yaml"
    rc, out, err = run("check", "--cluster-snapshot", snap, stall_rs, stall_rs)
    expect(rc, out, err, 1, "2 objects: 0 allowed, 0 patched, 2 denied, 0 not judged")
    warning = ("gpuadmit: warning: %s holds no PriorityClasses (read by the priority-class and "
               "capacity rules): those rules judge as if the cluster had none; write it with "
               "kubectl get nodes,pods,priorityclasses,replicasets,deployments,statefulsets,"
               "jobs -A -o json" % snap)
    eq(err.splitlines(), [warning], "stderr")
    denial = ("  denied: gpuadmit: ReplicaSet ml/stall [priority-class] priorityClassName "
              "\"batch-low\" is not a known PriorityClass (the cluster view is a snapshot without "
              "PriorityClasses: list them in it too, kubectl get priorityclasses -o json)")
    eq([l for l in out.splitlines() if l.startswith("  denied: ")], [denial, denial], "denials")
    # the whole snapshot: the class is known, nothing to warn about
    rc, out, err = run("check", "--cluster-snapshot", STALL, stall_rs)
    expect(rc, out, err, 0, "  priority-class   pass")
    eq(err, "", "stderr with every kind in the snapshot")
    # a policy that reads no class is not warned about the classes
    gpu_only = os.path.join(ROOT, "tests/data/policies/debug-exempt.yaml")
    rc, out, err = run("check", "-r", gpu_only, "--cluster-snapshot", snap, stall_rs)
    eq((rc, err), (0, ""), "a gpu-request policy against the snapshot without classes")
    # judging no object says it too: linting the policy, and capacity's report without -f
    rc, out, err = run("check", "-r", "rules", "--cluster-snapshot", snap)
    eq((rc, err.splitlines()), (0, [warning]), "check -r with no manifests")
    rc, out, err = run("capacity", "--cluster-snapshot", snap)
    eq((rc, err.splitlines()), (0, [warning]), "capacity without -f")
    rc, out, err = run("capacity", "--cluster-snapshot", STALL)
    eq((rc, err), (0, ""), "capacity without -f on the whole snapshot")


@test
def check_broken_yaml_exits_2_naming_the_line():
    rc, out, err = run("check", "tests/data/manifests/broken.yaml")
    eq(rc, 2, "exit code")
    eq(err.strip(), "gpuadmit check: tests/data/manifests/broken.yaml:10:6: document 1: YAML: did "
       "not find expected '-' indicator (while parsing a block collection that starts at 8:5)",
       "stderr")
    # the second document of a stream, and an object without a kind
    rc, out, err = run("check", "-", stdin=b"kind: Pod\napiVersion: v1\n---\na: [1,\n")
    eq(rc, 2, "exit code")
    check("<stdin>:5:1: document 2: YAML:" in err, "stderr: %r" % err)
    rc, out, err = run("check", "-", stdin=b"apiVersion: v1\nkind: Pod\n---\n\nmetadata: {}\n")
    eq(rc, 2, "exit code")
    check("<stdin>:5:1: document 2: not a Kubernetes object" in err, "stderr: %r" % err)
    # usage
    rc, out, err = run("check")
    eq(rc, 2, "no files and no -r: a usage error (an empty file list in CI must not pass)")
    rc, out, err = run("check", "--cluster-snapshot")
    eq(rc, 2, "an option without its value")
    rc, out, err = run("check", "-o", "yaml", "x")
    eq(rc, 2, "bad -o")
    rc, out, err = run("check", "tests/data/manifests/nonexistent.yaml")
    eq(rc, 2, "missing file")


@test
def test_runs_the_shipped_suites():
    rc, out, err = run("test", "rules/tests")
    expect(rc, out, err, 0, "rules/tests/capacity.yaml: capacity",
           "  ok   8 replicas at low priority are admitted with a warning that only 4 fit now")
    last = out.splitlines()[-1]
    check(last.startswith("gpuadmit-test: ") and last.endswith(" passed, 0 failed"), last)
    check(int(last.split()[1]) >= 20, last)
    # the issue's own words: the rules folder, policies and resources beside the suites
    rc, out2, err = run("test", "rules/")
    eq(rc, 0, "gpuadmit test rules/: exit code\n" + err)
    eq(out2.splitlines()[-1], last, "gpuadmit test rules/ runs the same suites")
    check("not a suite (kind: PolicyTest) not run" in err, err)


@test
def test_wrong_expectation_fails_with_a_diff():
    d = os.path.join(E.work, "suites")
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "wrong.yaml"), "w") as f:
        f.write("""apiVersion: gpuadmit.io/v1alpha1
kind: PolicyTest
metadata:
  name: wrong
spec:
  policy: %s
  cases:
    - name: the EKS Deployment is allowed untouched (it is not)
      file: %s
      expect:
        decision: allowed
        rules: {tolerations: pass}
        patched:
          /spec/template/spec/tolerations/0/effect: NoExecute
""" % (EKS, os.path.join(MANIFESTS, "eks-deployment.yaml")))
    rc, out, err = run("test", d)
    expect(rc, out, err, 1,
           "  FAIL the EKS Deployment is allowed untouched (it is not) (%s:8, Deployment "
           "ml/inference)" % os.path.join(d, "wrong.yaml"),
           "       decision: expected allowed, got patched",
           "       rule tolerations: expected pass, got patch",
           "         (added tolerations for nvidia.com/gpu:NoSchedule)",
           "       patched /spec/template/spec/tolerations/0/effect: expected \"NoExecute\", "
           "got \"NoSchedule\"",
           "gpuadmit-test: 0 passed, 1 failed")
    # an unknown key and an unknown rule are input errors, with line and column
    with open(os.path.join(d, "wrong.yaml"), "w") as f:
        f.write("""apiVersion: gpuadmit.io/v1alpha1
kind: PolicyTest
metadata: {name: bad}
spec:
  policy: %s
  cases:
    - name: x
      resource: {apiVersion: v1, kind: Pod, metadata: {name: p}}
      expct: {}
      expect:
        rules: {tolerationz: pass}
""" % EKS)
    rc, out, err = run("test", os.path.join(d, "wrong.yaml"))
    eq(rc, 2, "exit code")
    check("wrong.yaml:9:14: unknown key \"expct\" in a case" in err, err)
    check("wrong.yaml:11:30: expect.rules: the policy has no rule \"tolerationz\"" in err, err)


@test
def capacity_reports_nodes_and_fit():
    """Exit 1: stall.json's GPU nodes gpu-0..3 each have allocatable nvidia.com/gpu 4 and 3 of it
    requested by bound batch-low pods (priority 1000). The ReplicaSet's pods are batch-low too,
    so the scheduler preempts none of them (DefaultPreemption only evicts lower priorities), and
    NodeResourcesFit leaves 4 - 3 = 1 one-GPU pod a node: 4 fit now of the 8 asked; the nodes'
    allocatable holds 4 x 4 = 16 at most. cpu-0 has no nvidia.com/gpu at all."""
    rc, out, err = run("capacity", "--cluster-snapshot", "tests/data/snapshots/stall.json", "-f",
                       "tests/data/manifests/stall-replicaset.yaml")
    expect(rc, out, err, 1, "tests/data/snapshots/stall.json: 5 nodes",
           "cpu-0  Ready      (no GPUs)                  -     -     -",
           "gpu-0  Ready      nvidia.com/gpu             4     3     1",
           "TOTAL             nvidia.com/gpu            16    12     4",
           "tests/data/manifests/stall-replicaset.yaml:3: ReplicaSet ml/stall: 8 replicas: does "
           "not fit now: 4 fit now, 16 at most",
           "  replicasets ml/stall: only 4 of 8 more pods fit now, the rest will wait Pending",
           "1 workload: 0 fit now, 1 does not fit now, 0 never fit, 0 not judged")
    check("not eligible: 1 node has no nvidia.com/gpu" in out, out)
    # without workloads: the cluster, exit 0
    rc, out, err = run("capacity", "--cluster-snapshot", STALL)
    expect(rc, out, err, 0, "TOTAL             nvidia.com/gpu            16    12     4")
    check("workload" not in out, "no workloads without files:\n" + out)
    rc, out, err = run("capacity", "--cluster-snapshot", STALL, "-o", "json")
    eq(rc, 0, "exit code")
    doc = json.loads(out)
    eq(doc["totals"], {"nvidia.com/gpu": {"allocatable": 16, "used": 12, "free": 4}}, "totals")
    check("workloads" not in doc, "no workloads without files")
    gpu0 = [n for n in doc["nodes"] if n["name"] == "gpu-0"][0]
    eq((gpu0["ready"], gpu0["cordoned"], gpu0["taints"]),
       (True, False, [{"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}]),
       "gpu-0")
    rc, out, err = run("capacity")
    eq((rc, err.strip()), (2, "gpuadmit capacity: give one of --cluster-snapshot and --kubeconfig"),
       "no source")


@test
def capacity_exits_0_when_every_workload_fits():
    """clean.yaml's Deployment asks for 2 one-GPU pods that tolerate the GPU taint: stall.json
    has 4 - 3 = 1 free on each of gpu-0..3 by NodeResourcesFit, 4 in all, so both fit without
    evicting anything. The report's 16 also counts the batch-low pods (1000) that its class
    gpu-standard (100000, PreemptLowerPriority) may preempt. The Service is no workload."""
    rc, out, err = run("capacity", "--cluster-snapshot", STALL, "tests/data/manifests/clean.yaml")
    expect(rc, out, err, 0,
           "tests/data/manifests/clean.yaml:3: Deployment ml/trainer: 2 replicas: fits: 16 fit "
           "now, 16 at most",
           "tests/data/manifests/clean.yaml:28: Service ml/trainer: not judged: not a workload "
           "with a pod template",
           "2 workloads: 1 fits now, 0 do not fit now, 0 never fit, 1 not judged")
    eq(err, "", "stderr")


def stall_replicas(n):
    """stall-replicaset.yaml with n replicas, as bytes for standard input."""
    with open(os.path.join(MANIFESTS, "stall-replicaset.yaml")) as f:
        text = f.read()
    check("replicas: 8" in text, "stall-replicaset.yaml lost its replicas")
    return text.replace("replicas: 8", "replicas: %d" % n).encode()


@test
def capacity_exits_3_when_a_workload_never_fits():
    """20 one-GPU pods on stall.json: NodeResourcesFit against the allocatable alone, nothing in
    use, holds 4 a node on gpu-0..3, 16 in all, and the capacity rule counts on no node
    autoscaler (autoscaling is not set): 4 would stay Pending for good, and gpuadmit check
    denies it."""
    rc, out, err = run("capacity", "--cluster-snapshot", STALL, "-", stdin=stall_replicas(20))
    expect(rc, out, err, 3,
           "<stdin>:3: ReplicaSet ml/stall: 20 replicas: never fits: 4 fit now, 16 at most",
           "  replicasets ml/stall can never fit: 20 pods at once, at most 16 fit the eligible "
           "nodes (16 nvidia.com/gpu in all, cordoned and not Ready nodes included); lower "
           "replicas to 16 or add nodes",
           "  gpuadmit check denies it: capacity",
           "1 workload: 0 fit now, 0 do not fit now, 1 never fits, 0 not judged")
    rc, out, err = run("check", "--cluster-snapshot", STALL, "-", stdin=stall_replicas(20))
    expect(rc, out, err, 1, "<stdin>:3: ReplicaSet ml/stall: denied")


@test
def capacity_takes_every_file_in_order_and_the_strongest_code():
    """-f and file arguments, in the order given; of several workloads 2 > 3 > 1 > 0 (each
    one's arithmetic is in the tests above)."""
    stall, clean = "tests/data/manifests/stall-replicaset.yaml", "tests/data/manifests/clean.yaml"
    rc, out, err = run("capacity", "--cluster-snapshot", STALL, "-f", clean, "-", "-f", stall,
                       stdin=stall_replicas(20))
    heads = [l for l in out.splitlines() if re.match(r"^\S+:\d+: ", l)]
    eq(heads, ["tests/data/manifests/clean.yaml:3: Deployment ml/trainer: 2 replicas: fits: 16 "
               "fit now, 16 at most",
               "tests/data/manifests/clean.yaml:28: Service ml/trainer: not judged: not a "
               "workload with a pod template",
               "<stdin>:3: ReplicaSet ml/stall: 20 replicas: never fits: 4 fit now, 16 at most",
               "tests/data/manifests/stall-replicaset.yaml:3: ReplicaSet ml/stall: 8 replicas: "
               "does not fit now: 4 fit now, 16 at most"], "every file, in order")
    expect(rc, out, err, 3,
           "4 workloads: 1 fits now, 1 does not fit now, 1 never fits, 1 not judged")
    rc, out, err = run("capacity", "--cluster-snapshot", STALL, clean, stall)
    expect(rc, out, err, 1,
           "3 workloads: 1 fits now, 1 does not fit now, 0 never fit, 1 not judged")
    # an input error wins: the report goes on, the exit code is 2
    rc, out, err = run("capacity", "--cluster-snapshot", STALL, "-f", stall, "-",
                       "tests/data/manifests/nonexistent.yaml", stdin=stall_replicas(20))
    expect(rc, out, err, 2,
           "2 workloads: 0 fit now, 1 does not fit now, 1 never fits, 0 not judged; 1 input error")
    check("gpuadmit capacity: tests/data/manifests/nonexistent.yaml: cannot read" in err, err)
    rc, out, err = run("capacity", "--cluster-snapshot", STALL, "-",
                       "tests/data/manifests/broken.yaml", stdin=stall_replicas(8))
    expect(rc, out, err, 2,
           "1 workload: 0 fit now, 1 does not fit now, 0 never fit, 0 not judged; 1 input error")
    check("gpuadmit capacity: tests/data/manifests/broken.yaml:10:6: document 1: YAML:" in err, err)
    # JSON: the same workloads, in order, with where they come from and the verdict
    rc, out, err = run("capacity", "--cluster-snapshot", STALL, "-o", "json", stall, clean)
    eq(rc, 1, "exit code of -o json")
    doc = json.loads(out)
    eq([(w["file"], w["line"], w["name"], w.get("verdict"), w.get("fitNow"))
        for w in doc["workloads"]],
       [(stall, 3, "stall", "notNow", 4), (clean, 3, "trainer", "fits", 16),
        (clean, 28, "trainer", None, None)], "workloads")
    eq(doc["summary"], {"fits": 1, "afterScaleUp": 0, "notNow": 1, "never": 0, "notJudged": 1, "errors": 0},
       "summary")
    # usage: standard input once, and no stray option
    rc, out, err = run("capacity", "--cluster-snapshot", STALL, "-", "-f", "-", stdin=b"")
    eq((rc, out, err.strip()),
       (2, "", "gpuadmit capacity: - (standard input) is given twice"), "- twice")
    rc, out, err = run("capacity", "--cluster-snapshot", STALL, "-x")
    eq((rc, err.strip()), (2, 'gpuadmit capacity: unknown option "-x"; see gpuadmit capacity '
                              '--help'), "an unknown option")


@test
def capacity_and_check_agree_on_time_sliced_gpus():
    """eks-t4-sliced.json: two g4dn.xlarge, one T4 each time-sliced 4 ways, so allocatable
    nvidia.com/gpu 4 a node; one slice in use on ip-10-0-1-11 by a gpu-standard pod, the class
    the policy gives these too (no preemption among equals). The pods tolerate the node group's
    taint as the policy patches them (the tolerations rule), so both nodes pass
    TaintToleration. NodeResourcesFit, one slice a pod: 3 + 4 = 7 fit now, 4 + 4 = 8 at most,
    and the 2 replicas fit. Two slices a pod: floor(3/2) + floor(4/2) = 3 now, 2 + 2 = 4 at
    most, so the scheduler would place it; but a slice is not a faster GPU, and the device
    plugin's failRequestsGreaterThanOne fails such a pod on the node: gpuadmit check denies it
    (denySharedMultiple), and capacity must say it never fits, not that 3 fit."""
    f = "tests/data/manifests/sliced-deployments.yaml"
    snap = "tests/data/snapshots/eks-t4-sliced.json"
    why = ("container \"server\" asks for 2 nvidia.com/gpu, but every eligible node shares its "
           "GPUs (time-slicing, nvidia.com/gpu.replicas=4): more than one slice gains nothing, "
           "and a device plugin running with failRequestsGreaterThanOne fails the pod on the "
           "node (UnexpectedAdmissionError); ask for 1")
    rc, out, err = run("check", "--cluster-snapshot", snap, f)
    expect(rc, out, err, 1,
           "%s:4: Deployment ml/one-slice: patched" % f,
           "%s:23: Deployment ml/two-slices: denied" % f,
           "  capacity         deny   " + why,
           "2 objects: 0 allowed, 1 patched, 1 denied, 0 not judged")
    rc, out, err = run("capacity", "--cluster-snapshot", snap, f)
    expect(rc, out, err, 3,
           "%s:4: Deployment ml/one-slice: 2 replicas: fits: 7 fit now, 8 at most" % f,
           "%s:23: Deployment ml/two-slices: 1 replica: never fits (by the GPUs' count alone 3 "
           "would fit now, 4 at most)" % f,
           "  " + why,
           "  gpuadmit check denies it: capacity",
           "2 workloads: 1 fits now, 0 do not fit now, 1 never fits, 0 not judged")
    # object by object, as JSON: what check denies for capacity, capacity never calls fitting
    rc, out, err = run("check", "--cluster-snapshot", snap, "-o", "json", f)
    checked = {o["name"]: [r["outcome"] for r in o["rules"] if r["rule"] == "capacity"][0]
               for o in json.loads(out)["objects"]}
    rc, out, err = run("capacity", "--cluster-snapshot", snap, "-o", "json", f)
    reported = {w["name"]: (w["verdict"], w["fitNow"], w["fitEver"])
                for w in json.loads(out)["workloads"]}
    eq((checked, reported), ({"one-slice": "pass", "two-slices": "deny"},
                             {"one-slice": ("fits", 7, 8), "two-slices": ("never", 3, 4)}),
       "check and capacity")


@test
def capacity_refuses_a_policy_without_a_capacity_rule():
    """capacity -f judges through the policy's capacity rule, as check does: a policy without
    one (the EKS example has none) cannot answer, and saying every workload is "not judged"
    with exit 0 would pass a CI gate it never checked. Without -f the cluster report stands."""
    ex = "rules/examples/eks-time-sliced-t4.yaml"
    snap = "tests/data/snapshots/eks-t4-sliced.json"
    rc, out, err = run("capacity", "--cluster-snapshot", snap, "-r", ex,
                       "tests/data/manifests/sliced-deployments.yaml")
    eq((rc, out), (2, ""), "exit code and stdout")
    eq(err.strip(), "gpuadmit capacity: the policy %s has no capacity rule, so nothing judges "
       "whether workloads fit; add one (rules/README.md, type: capacity) or use -r rules" % ex,
       "stderr")
    rc, out, err = run("capacity", "--cluster-snapshot", snap, "-r", ex)
    eq(rc, 0, "the cluster report without -f")
    check("nvidia.com/gpu" in out, "the report names the GPU resource:\n%s" % out)


@test
def capacity_judges_workloads_as_the_policy_patches_them():
    """-f judges what /validate sees: the Job after the tolerations and selector the policy
    adds (16 fit, as gpuadmit check says), and skips what the webhook would not judge."""
    f = "tests/data/manifests/mixed-workloads.yaml"
    # the Job gets gpu-standard (100000), which may preempt stall.json's batch-low pods (1000):
    # all 16 GPUs of gpu-0..3, one a pod; 30 run at once only as the first ones finish, so 14
    # wait Pending now (exit 1), not forever
    rc, out, err = run("capacity", "--cluster-snapshot", STALL, "-f", f)
    expect(rc, out, err, 1,
           "%s:3: Job ml/sweep: 30 replicas: does not fit now: 16 fit now, 16 at most" % f,
           "  (judged as the policy patches it: see gpuadmit check)",
           "%s:21: Service ml/sweep: not judged: not a workload with a pod template" % f,
           "%s:30: Pod kube-system/probe: not judged: out of the policy's scope (exclude, "
           "namespaces), so the webhook admits it" % f)
    rc, out, err = run("check", "--cluster-snapshot", STALL, f)
    # a Job's pods run as others finish: its width is clamped to at most, with a warning
    check("jobs ml/sweep runs at most 16 of its 30 pods at once" in out, out)


@test
def capacity_lists_a_live_cluster_once():
    """Through a (simulated) API server: listed once, then the watcher is stopped."""
    ca, crt, key = make_certs(os.path.join(E.work, "pki"))
    fake = fake_apiserver.FakeAPIServer(crt, key, token="t0k3n")
    fake.start()
    try:
        with open(STALL) as f:
            items = json.load(f)["items"]
        plural = {"Node": "nodes", "Pod": "pods", "PriorityClass": "priorityclasses",
                  "Deployment": "deployments"}
        for it in items:
            fake.put(plural[it["kind"]], it)
        kcfg = fake.kubeconfig(os.path.join(E.work, "kubeconfig"), ca_file=ca, token="t0k3n")
        rc, out, err = run("capacity", "--kubeconfig", kcfg, "-o", "json", "--timeout", "20")
        eq(rc, 0, "exit code (stderr %r)" % err)
        eq(json.loads(out)["totals"],
           {"nvidia.com/gpu": {"allocatable": 16, "used": 12, "free": 4}}, "totals")
    finally:
        fake.stop()


@test
def help_lists_the_commands():
    rc, out, err = run("--help")
    eq(rc, 0, "exit code")
    for cmd in ("check", "test", "capacity"):
        check(any(l.startswith("  %s " % cmd) for l in out.splitlines()), "%s: %s" % (cmd, out))


@test
def check_fail_on():
    """--fail-on: the exit code for CI. The stall ReplicaSet gets a capacity warning (only 4 of
    8 fit now), the EKS Deployment is only patched, the clean one neither: each level fails on
    its own kind of finding and on the stronger ones, Audit findings count as what they report
    ("would warn", "would patch"), and without a snapshot capacity's "not checked" is no
    finding."""
    stall = ["--cluster-snapshot", STALL, "tests/data/manifests/stall-replicaset.yaml"]
    eks = ["tests/data/manifests/eks-deployment.yaml"]
    clean = ["tests/data/manifests/clean.yaml"]
    for args, want in ((stall, {"deny": 0, "warn": 1, "patch": 1}),
                       (["--audit-only"] + stall, {"deny": 0, "warn": 1, "patch": 1}),
                       (eks, {"deny": 0, "warn": 0, "patch": 1}),
                       (["--audit-only"] + eks, {"deny": 0, "warn": 0, "patch": 1}),
                       (clean, {"deny": 0, "warn": 0, "patch": 0})):
        for level, code in want.items():
            rc, out, err = run("check", "--fail-on", level, *args)
            eq(rc, code, "check --fail-on %s %s (stderr %r)" % (level, " ".join(args), err))
        rc, out, err = run("check", *args)
        eq(rc, want["deny"], "check %s: the default is --fail-on deny" % " ".join(args))
    rc, out, err = run("check", "--fail-on", "warn", *stall)
    expect(rc, out, err, 1, "1 object: 1 allowed, 0 patched, 0 denied, 0 not judged; "
           "1 fail --fail-on warn")
    rc, out, err = run("check", "-r", deny_policy(), "--fail-on", "warn", *stall)
    eq(rc, 1, "a denial fails --fail-on warn too")
    rc, out, err = run("check", "--fail-on", "warning", *clean)
    eq((rc, err.strip()), (2, 'gpuadmit check: --fail-on takes deny, warn or patch, got "warning"'),
       "a bad level")


@test
def check_without_manifests_lints_the_policy():
    """check -r PATH with no files loads the policy: 0 and a summary when it loads, 2 and each
    error with file:line:column when it does not."""
    with open(os.path.join(RULES, "default.yaml")) as f:
        n = len(yaml.safe_load(f)["spec"]["rules"])
    rc, out, err = run("check", "-r", RULES)
    eq((rc, out), (0, "%s: the policy loads: 1 policy, %d rules (no manifest files to judge)\n"
                   % (RULES, n)), "the default policy (stderr %r)" % err)
    rc, out, err = run("check", "-r", RULES, "-o", "json")
    eq((rc, json.loads(out)), (0, {"policies": 1, "rules": n}), "the same, in JSON")
    rc, out, err = run("check", "-r", RULES, "--cluster-snapshot", STALL)
    eq(rc, 0, "with a snapshot that loads")
    rc, out, err = run("check", "-r", RULES, "--cluster-snapshot", "tests/data/nonexistent.json")
    eq(rc, 2, "a snapshot given is read, files or not (stderr %r)" % err)
    dup = os.path.join(ROOT, "tests/data/rules/dup")
    rc, out, err = run("check", "-r", dup)
    eq((rc, out), (2, ""), "a broken policy: exit 2, nothing on stdout")
    check("tests/data/rules/dup/b.yaml:7:13: duplicate rule name \"gpu-request\"" in err,
          "the error names the file, line and column: %r" % err)


@test
def every_command_has_help():
    """COMMAND --help prints the command's usage on standard output and exits 0, for every
    command that gpuadmit --help lists, and says the command's exit codes (README.md's table
    has them all)."""
    rc, out, err = run("--help")
    cmds = [m.group(1) for m in (re.match(r"^  ([a-z]+)  +\S", l) for l in out.splitlines()) if m]
    check(len(cmds) >= 6, "commands in --help: %r" % cmds)
    check(any(l.startswith("Exit code: ") for l in out.splitlines()), "gpuadmit --help: " + out)
    for cmd in cmds:
        rc, out, err = run(cmd, "--help")
        eq(rc, 0, "%s --help: exit code (stderr %r)" % (cmd, err))
        check(out.startswith("usage: gpuadmit %s" % cmd), "%s --help: %r" % (cmd, out[:200]))
        codes = out[out.find("\nExit code: "):]
        check(codes.startswith("\nExit code: 0 ") and " 2 " in codes.replace("\n", " "),
              "%s --help names its exit codes: %r" % (cmd, out[-400:]))
    rc, out, err = run("capacity", "--help")
    check("1 some workload does not fit now" in out and "3 some workload never fits" in out and
          "strongest wins: 2, then 3, then 1, then 0" in out.replace("\n", " "), out)


@test
def empty_manifests_are_an_input_error():
    """A manifest with no object (a render that failed into the file, or only comments) exits
    2 from check and from capacity, as kubectl apply refuses one ("no objects passed to
    apply"); beside a file that has objects it is no error."""
    empty = os.path.join(E.work, "empty.yaml")
    with open(empty, "w") as f:
        f.write("---\n# nothing rendered\n---\n")
    rc, out, err = run("check", empty)
    check(rc == 2 and "gpuadmit check: %s: no Kubernetes objects in the file given" % empty
          in err, "check: exit %d, %r" % (rc, err))
    rc, out, err = run("capacity", "--cluster-snapshot", STALL, "-f", empty)
    check(rc == 2 and "gpuadmit capacity: %s: no Kubernetes objects in the file given" % empty
          in err, "capacity: exit %d, %r" % (rc, err))
    rc, out, err = run("check", "--cluster-snapshot", STALL, empty,
                       "tests/data/manifests/clean.yaml")
    expect(rc, out, err, 0, "2 objects: 1 allowed, 0 patched, 0 denied, 1 not judged")


@test
def nested_list_items_keep_their_lines():
    """The items of a List inside a List are reported at their own lines (7 and 13 here), not
    at the line of the outer List's item."""
    nested = os.path.join(E.work, "nested.yaml")
    with open(nested, "w") as f:
        f.write("apiVersion: v1\nkind: List\nitems:\n"
                "  - apiVersion: v1\n    kind: List\n    items:\n"
                "      - apiVersion: apps/v1\n        kind: Deployment\n"
                "        metadata: {name: inner, namespace: ml}\n"
                "        spec: {replicas: 1, selector: {matchLabels: {a: b}}, template: "
                "{metadata: {labels: {a: b}}, spec: {containers: [{name: c, image: x}]}}}\n"
                "  - apiVersion: v1\n    kind: Service\n"
                "    metadata: {name: outer, namespace: ml}\n")
    rc, out, err = run("check", nested)
    expect(rc, out, err, 0, "%s:7: Deployment ml/inner: allowed" % nested,
           "%s:11: Service ml/outer: not judged" % nested)
    rc, out, err = run("capacity", "--cluster-snapshot", STALL, "-f", nested)
    check(rc == 0 and ("%s:7: Deployment ml/inner:" % nested) in out and
          ("%s:11: Service ml/outer:" % nested) in out, "capacity: exit %d\n%s" % (rc, out))


@test
def lint_warns_of_a_pool_no_node_carries():
    """check -r with a snapshot and no files: a GPU pool whose nodeLabels no node offering its
    resources carries all of (Tesla-T4-SHARED on renamed nodes, labelled Tesla-T4) is warned
    about before a pod meets it; the example's pools, which the nodes do carry, are not."""
    snap = "tests/data/snapshots/eks-t4-a100-mig.json"
    rc, out, err = run("check", "-r", "rules/tests/policies/pools-wrong-label.yaml",
                       "--cluster-snapshot", snap)
    check(rc == 0 and "gpuadmit: warning: policy pools-wrong-label, GPU pool t4: no node of %s "
          "that offers its resources carries all of its nodeLabels" % snap in err and
          "pool a100-mig" not in err, "exit %d, %r" % (rc, err))
    rc, out, err = run("check", "-r", "rules/examples/eks-t4-a100-mig.yaml",
                       "--cluster-snapshot", snap)
    check(rc == 0 and err == "", "the example's pools: exit %d, %r" % (rc, err))


@test
def capacity_judges_parked_workloads_as_they_will_run():
    """A suspended Job (Kueue's way) and a Deployment at 0 replicas ask for no pods now, so the
    webhook admits them; capacity reports them as they will run: the Job as when resumed, the
    Deployment as at 1 replica. A pod asking for 8 GPUs fits no node of stall.json (4 each:
    kube-scheduler's NodeResourcesFit filter says "Insufficient nvidia.com/gpu"), so both never
    fit (exit 3). At 0 replicas a replica that only waits is no failure: exit 0."""
    def manifest(kind, extra, gpus):
        spec = {"containers": [{"name": "c", "image": "x",
                                "resources": {"limits": {"nvidia.com/gpu": str(gpus)}}}]}
        if kind == "Job":
            spec["restartPolicy"] = "Never"
            body = dict(extra, parallelism=2, completions=2, template={"spec": spec})
        else:
            body = dict(extra, selector={"matchLabels": {"a": "b"}},
                        template={"metadata": {"labels": {"a": "b"}}, "spec": spec})
        path = os.path.join(E.work, "parked-%s-%d.json" % (kind, gpus))
        with open(path, "w") as f:
            json.dump({"apiVersion": "batch/v1" if kind == "Job" else "apps/v1", "kind": kind,
                       "metadata": {"name": "p", "namespace": "ml"}, "spec": body}, f)
        return path
    job = manifest("Job", {"suspend": True}, 8)
    rc, out, err = run("capacity", "--cluster-snapshot", STALL, "-f", job)
    check(rc == 3 and "%s:1: Job ml/p: 2 replicas: never fits" % job in out and
          "(suspended: judged as when it is resumed)" in out and "check denies it" not in out,
          "suspended Job: exit %d\n%s%s" % (rc, out, err))
    dep = manifest("Deployment", {"replicas": 0}, 8)
    rc, out, err = run("capacity", "--cluster-snapshot", STALL, "-f", dep)
    check(rc == 3 and "never fits" in out and
          "(0 replicas: judged at 1, whether a replica can ever fit)" in out,
          "0 replicas: exit %d\n%s%s" % (rc, out, err))
    # parallelism 0 pauses a Job: judged at 1 as well
    job0 = manifest("Job", {"parallelism": 0}, 8)
    with open(job0) as f:
        j0 = json.load(f)
    j0["spec"]["parallelism"] = 0
    with open(job0, "w") as f:
        json.dump(j0, f)
    rc, out, err = run("capacity", "--cluster-snapshot", STALL, "-f", job0)
    check(rc == 3 and "%s:1: Job ml/p: 0 replicas: never fits" % job0 in out and
          "(parallelism 0: judged at 1, whether a pod can ever fit)" in out,
          "parallelism 0: exit %d\n%s%s" % (rc, out, err))
    # what check denies is the object as written: a privileged container at 0 replicas
    with open(dep) as f:
        d0 = json.load(f)
    d0["spec"]["template"]["spec"]["containers"][0]["securityContext"] = {"privileged": True}
    priv = os.path.join(E.work, "parked-privileged.json")
    with open(priv, "w") as f:
        json.dump(d0, f)
    rc, out, err = run("capacity", "--cluster-snapshot", STALL, "-o", "json", "-f", priv)
    w = json.loads(out)["workloads"][0]
    check(w["replicas"] == 0 and w["deniedBy"] == ["gpu-request"] and
          w["decision"] == "denied" and w["judgedAs"].startswith("0 replicas"),
          "privileged at 0 replicas: %r" % w)
    full = os.path.join(ROOT, "tests/data/snapshots/full.json")  # every GPU in use
    dep = manifest("Deployment", {"replicas": 0}, 1)
    rc, out, err = run("capacity", "--cluster-snapshot", full, "-f", dep)
    check(rc == 0 and ": fits:" in out, "0 replicas that would wait: exit %d\n%s%s" % (rc, out, err))


def setup(work):
    E.work = work


def main():
    return run_suite("e2e-cli", TESTS, 150 if SLOW else 90, setup)


if __name__ == "__main__":
    sys.exit(main())
