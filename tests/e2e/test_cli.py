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
        ("node-selector", "pass"), ("capacity", "deny")], "rules")
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
    rc, out, err = run("capacity", "--cluster-snapshot", "tests/data/snapshots/stall.json", "-f",
                       "tests/data/manifests/stall-replicaset.yaml")
    expect(rc, out, err, 0, "tests/data/snapshots/stall.json: 5 nodes",
           "cpu-0  Ready      (no GPUs)                  -     -     -",
           "gpu-0  Ready      nvidia.com/gpu             4     3     1",
           "TOTAL             nvidia.com/gpu            16    12     4",
           "ReplicaSet ml/stall: 8 replicas: 4 fit now, 16 at most")
    check("not eligible: 1 node has no nvidia.com/gpu" in out, out)
    rc, out, err = run("capacity", "--cluster-snapshot", STALL, "-o", "json")
    eq(rc, 0, "exit code")
    doc = json.loads(out)
    eq(doc["totals"], {"nvidia.com/gpu": {"allocatable": 16, "used": 12, "free": 4}}, "totals")
    gpu0 = [n for n in doc["nodes"] if n["name"] == "gpu-0"][0]
    eq((gpu0["ready"], gpu0["cordoned"], gpu0["taints"]),
       (True, False, [{"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}]),
       "gpu-0")
    rc, out, err = run("capacity")
    eq(rc, 2, "no source")


@test
def capacity_judges_workloads_as_the_policy_patches_them():
    """-f judges what /validate sees: the Job after the tolerations and selector the policy
    adds (16 fit, as gpuadmit check says), and skips what the webhook would not judge."""
    f = "tests/data/manifests/mixed-workloads.yaml"
    rc, out, err = run("capacity", "--cluster-snapshot", STALL, "-f", f)
    expect(rc, out, err, 0, "Job ml/sweep: 30 replicas: 16 fit now, 16 at most",
           "  (judged as the policy patches it: see gpuadmit check)",
           "Service ml/sweep: not judged: not a workload with a pod template",
           "Pod kube-system/probe: not judged: out of the policy's scope (exclude, namespaces), "
           "so the webhook admits it")
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
    command that gpuadmit --help lists."""
    rc, out, err = run("--help")
    cmds = [m.group(1) for m in (re.match(r"^  ([a-z]+)  +\S", l) for l in out.splitlines()) if m]
    check(len(cmds) >= 6, "commands in --help: %r" % cmds)
    for cmd in cmds:
        rc, out, err = run(cmd, "--help")
        eq(rc, 0, "%s --help: exit code (stderr %r)" % (cmd, err))
        check(out.startswith("usage: gpuadmit %s" % cmd), "%s --help: %r" % (cmd, out[:200]))


def setup(work):
    E.work = work


def main():
    return run_suite("e2e-cli", TESTS, 150 if SLOW else 90, setup)


if __name__ == "__main__":
    sys.exit(main())
