#!/usr/bin/env python3
"""End-to-end tests of gpuadmit's GPU policy: the real binary, real TLS, real HTTP.

    GPUADMIT_BIN=build/release/gpuadmit python3 tests/e2e/test_policy.py [NAME-PART...]
    GPUADMIT_SLOW=1 ...    slower binary (sanitizers): same assertions, longer waits

What is tested:
  * every rule type (gpu-request, priority-class, tolerations, node-selector) with every action
    and enforcement, at /mutate and /validate, against the table in webhook/policy/eval.h: denials and
    their messages, exact JSON Patches, warnings, audit annotations and the decision log; every
    patch is applied here (an RFC 6902 "add" applier written for this file) and the patched
    pod must get no patch at /mutate and be allowed at /validate;
  * --audit-only (and a policy's spec.auditOnly): nothing denied or patched, every would-be
    decision in the audit annotations and the log;
  * hot reload under load: the switch time, no failed answer, broken edits refused with
    FILE:LINE:COLUMN and without effect, a later good edit and SIGHUP taking effect;
  * the all-fields fixtures of tests/data/k8s/testdata through rules/default.yaml (and through a
    policy that adds GPU requests): well-formed answers, patches that apply to the object as
    sent, patched objects that validate against the OpenAPI v3 schemas and are valid in the ways
    the schemas do not check (priority matches the class, no duplicate tolerations, GPU
    requests equal limits).

Python 3 standard library plus python3-jsonschema (Debian package). The policies are written
from tests/e2e/policy/template.yaml into temporary rules directories. Prints "ok - NAME" or
"not ok - NAME: REASON" per test and ends with "e2e-policy: N passed, M failed"; exits 1 on
any failure.
"""
import base64
import copy
import http.client
import json
import os
import re
import shutil
import signal
import sys
import tempfile
import threading
import time
import traceback
import uuid

try:
    import jsonschema
except ImportError:  # reported as a failed setup by main()
    jsonschema = None

HERE = os.path.dirname(os.path.abspath(__file__))
sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, HERE)
from common import (CertPair, SLOW, SERVICE_DNS, Fail, ServerProcess, check, indent,  # noqa: E402
                    kill_running, t, tls_connect)

ROOT = os.path.dirname(os.path.dirname(HERE))
BIN = os.environ.get("GPUADMIT_BIN", "build/release/gpuadmit")
K8S = os.path.join(ROOT, "tests", "data", "k8s")
TEMPLATE = os.path.join(HERE, "policy", "template.yaml")
DEFAULT_RULES = os.path.join(ROOT, "rules", "default.yaml")
SUITE_LIMIT_S = 150 if SLOW else 90  # last-resort watchdog; a normal run takes well under 60 s
RELOAD_LIMIT_S = 2.0  # a rule file change must be in force within this (not scaled)
JSON_CT = {"Content-Type": "application/json"}
REFUSED = "policy refused; the last good policy stays in force"


def eq(got, want, what):
    if got != want:
        raise Fail("%s: expected %s, got %s" % (what, js(want), js(got)))


def js(v):
    return json.dumps(v, sort_keys=True)


# ---------------------------------------------------------------------------------------------
# certificates, the server, the client (after tests/e2e/test_server.py)



class Server(ServerProcess):
    """One gpuadmit process serving the rules in rules_dir. Use as a context manager: the process
    is always stopped on exit; on a clean exit of the block it must stop gracefully with code 0,
    no sanitizer report and a log of JSON lines."""

    def __init__(self, rules_dir, *extra, name="srv"):
        self.rules = rules_dir
        self.log_path = os.path.join(E.work, "%s-%d.log" % (name, time.monotonic_ns()))
        self.args = [BIN, "serve", "--listen", "127.0.0.1:0", "--tls-cert", E.pki.crt,
                     "--tls-key", E.pki.key, "--rules", rules_dir, "--shutdown-grace", "5"]
        self.args += list(extra)
        self.proc = None
        self.port = None
        self.serving = None

    def __enter__(self):
        return self.launch()

    def __exit__(self, exc_type, exc, tb):
        if exc_type is not None:
            self.stop(t(3))
            return False
        self.check_clean_exit(self.stop(t(12)))
        return False

    def alive(self):
        check(self.proc.poll() is None, "server exited with %s; log:\n%s"
              % (self.proc.returncode, self.log_tail()))


class Conn(http.client.HTTPSConnection):
    """HTTPS to 127.0.0.1:PORT, verified against the run's CA and the Service DNS name."""

    def __init__(self, port, timeout=None):
        super().__init__(SERVICE_DNS, port, context=E.pki.context(), timeout=timeout or t(10))

    def connect(self):
        self.sock = tls_connect(self.port, self._context, self.timeout)


# ---------------------------------------------------------------------------------------------
# admission reviews and answers

RESOURCES = {  # kind -> (group, version, resource)
    "Pod": ("", "v1", "pods"),
    "Deployment": ("apps", "v1", "deployments"),
    "ReplicaSet": ("apps", "v1", "replicasets"),
    "StatefulSet": ("apps", "v1", "statefulsets"),
    "Job": ("batch", "v1", "jobs"),
    "ConfigMap": ("", "v1", "configmaps"),
}
USER = "alice@example.com"


def review_of(obj, uid, ns, kind="Pod", old=None):
    """The AdmissionReview of obj's CREATE, or with old its UPDATE from old."""
    group, version, resource = RESOURCES[kind]
    gvk = {"group": group, "version": version, "kind": kind}
    gvr = {"group": group, "version": version, "resource": resource}
    if old is not None:
        rv = review_of(obj, uid, ns, kind)
        rv["request"].update(operation="UPDATE", oldObject=old, options={
            "apiVersion": "meta.k8s.io/v1", "kind": "UpdateOptions"})
        return rv
    return {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": uid, "kind": gvk, "resource": gvr, "requestKind": gvk,
            "requestResource": gvr, "name": obj.get("metadata", {}).get("name", ""),
            "namespace": ns, "operation": "CREATE",
            "userInfo": {"username": USER, "uid": "0b6c3a9e-2f1d-4e8a-9c7b-5d4e3f2a1b0c",
                         "groups": ["ml-team", "system:authenticated"]},
            "object": obj, "oldObject": None, "dryRun": False,
            "options": {"apiVersion": "meta.k8s.io/v1", "kind": "CreateOptions"},
        },
    }


RESPONSE_KEYS = {"uid", "allowed", "status", "patch", "patchType", "warnings", "auditAnnotations"}


class Answer:
    """A checked, well-formed admission answer (HTTP 200, an AdmissionReview for our uid)."""

    def __init__(self, status, ctype, body, uid, path, since):
        self.uid, self.path, self.since, self.body = uid, path, since, body
        eq(status, 200, "%s HTTP status (body %r)" % (path, body[:300]))
        eq(ctype, "application/json", "%s Content-Type" % path)
        try:
            doc = json.loads(body)
        except ValueError:
            raise Fail("%s answer is not JSON: %r" % (path, body[:300]))
        eq(doc.get("apiVersion"), "admission.k8s.io/v1", "%s apiVersion" % path)
        eq(doc.get("kind"), "AdmissionReview", "%s kind" % path)
        r = doc.get("response")
        check(isinstance(r, dict), "%s: no response object in %r" % (path, body[:300]))
        self.resp = r
        check(set(r) <= RESPONSE_KEYS, "%s: unexpected response keys %s" % (path, sorted(r)))
        eq(r.get("uid"), uid, "%s response.uid" % path)
        check(isinstance(r.get("allowed"), bool), "%s: response.allowed is %r" % (path, r.get(
            "allowed")))
        self.allowed = r["allowed"]
        if path == "/validate":
            check("patch" not in r and "patchType" not in r,
                  "/validate answer carries patch/patchType: %s" % js(r))
        check(("patch" in r) == ("patchType" in r),
              "patch and patchType must travel together: %s" % js(r))
        self.patch = None
        if "patch" in r:
            eq(r["patchType"], "JSONPatch", "patchType")
            check(isinstance(r["patch"], str), "patch is not a string")
            try:
                self.patch = json.loads(base64.b64decode(r["patch"], validate=True))
            except ValueError as e:
                raise Fail("patch is not base64 of JSON: %s (%r)" % (e, r["patch"][:100]))
            check(isinstance(self.patch, list) and self.patch,
                  "patch is not a non-empty JSON array: %s" % js(self.patch))
        self.warnings = r.get("warnings")
        if self.warnings is not None:
            check(isinstance(self.warnings, list) and self.warnings and
                  all(isinstance(w, str) for w in self.warnings),
                  "warnings is not a non-empty list of strings: %s" % js(self.warnings))
            for w in self.warnings:
                check(all(ord(ch) >= 0x20 and ord(ch) != 0x7f for ch in w),
                      "warning has a control character (the apiserver drops it): %r" % w)
        self.annotations = r.get("auditAnnotations")
        if self.annotations is not None:
            check(isinstance(self.annotations, dict) and self.annotations and
                  all(isinstance(v, str) for v in self.annotations.values()),
                  "auditAnnotations is not a non-empty map of strings: %s"
                  % js(self.annotations))
            for k in self.annotations:
                check(re.fullmatch(r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?", k),
                      "audit annotation key %r is not a qualified name" % k)
        self.status = r.get("status")
        if self.allowed:
            check(self.status is None, "allowed answer carries a status: %s" % js(r))
        else:
            check(isinstance(self.status, dict), "denial without status: %s" % js(r))
            eq(self.status.get("code"), 403, "denial status.code")
            eq(self.status.get("status"), "Failure", "denial status.status")
            eq(self.status.get("reason"), "Forbidden", "denial status.reason")
            check(isinstance(self.status.get("message"), str), "denial without status.message")

    @property
    def message(self):
        return self.status.get("message") if self.status else None

    def __repr__(self):
        return "%s %s" % (self.path, js(self.resp))


def admit(srv, conn, path, obj, ns, kind="Pod", uid=None, old=None, sub=None):
    uid = uid or str(uuid.uuid4())
    since = srv.log_size()
    rv = review_of(obj, uid, ns, kind, old)
    if sub is not None:
        rv["request"]["subResource"] = rv["request"]["requestSubResource"] = sub
    conn.request("POST", path, body=json.dumps(rv).encode(),
                 headers=JSON_CT)
    resp = conn.getresponse()
    body = resp.read()
    return Answer(resp.status, resp.getheader("Content-Type"), body, uid, path, since)


def expect(a, allowed=True, patch=None, warnings=None, annotations=None, message=None):
    """The whole answer, field by field (None: the field is absent)."""
    eq(a.allowed, allowed, "%s allowed (%r)" % (a.path, a))
    eq(a.message, message, "%s denial message" % a.path)
    eq(a.patch, patch, "%s patch" % a.path)
    eq(a.warnings, warnings, "%s warnings" % a.path)
    eq(a.annotations, annotations, "%s auditAnnotations" % a.path)


def decisions_of(srv, a, want_n):
    """The decision log events for the answer's uid (waits a little for want_n of them)."""
    deadline = time.monotonic() + t(2)
    while True:
        evs = [ev for ev in srv.events(a.since)
               if ev.get("msg") == "decision" and ev.get("uid") == a.uid]
        if len(evs) >= want_n or time.monotonic() >= deadline:
            return evs
        time.sleep(0.02)


def expect_log(srv, a, want, ns=None, kind="Pod", name=None):
    """want: [(rule, enforcement, outcome, message)], exactly the decision lines for a.uid."""
    evs = decisions_of(srv, a, len(want))
    got = [(ev.get("rule"), ev.get("enforcement"), ev.get("outcome"), ev.get("message"))
           for ev in evs]
    eq(got, [tuple(w) for w in want], "%s decision log lines (rule, enforcement, "
       "outcome, message)" % a.path)
    for ev in evs:
        eq(ev.get("level"), "info", "decision log level")
        eq(ev.get("operation"), "CREATE", "decision log operation")
        eq(ev.get("user"), USER, "decision log user")
        eq(ev.get("kind"), kind, "decision log kind")
        if ns is not None:
            eq(ev.get("namespace"), ns, "decision log namespace")
        if name is not None:
            eq(ev.get("name"), name, "decision log name")
    return evs


# ---------------------------------------------------------------------------------------------
# JSON Patch (RFC 6902 "add" only, which is all gpuadmit emits)


def pointer_tokens(path):
    check(isinstance(path, str) and path.startswith("/"), "bad JSON pointer %r" % (path,))
    toks = path[1:].split("/")
    for tok in toks:
        check(re.fullmatch(r"([^~]|~[01])*", tok), "bad escape in JSON pointer %r" % path)
    return [tok.replace("~1", "/").replace("~0", "~") for tok in toks]


def apply_patch(doc, ops):
    """Applies ops to a copy of doc as the apiserver would; a missing parent fails."""
    out = copy.deepcopy(doc)
    for i, op in enumerate(ops):
        check(isinstance(op, dict) and set(op) == {"op", "path", "value"},
              "patch op %d is not {op, path, value}: %s" % (i, js(op)))
        eq(op["op"], "add", "patch op %d" % i)
        toks = pointer_tokens(op["path"])
        node = out
        for depth, tok in enumerate(toks[:-1]):
            where = "/".join(toks[:depth + 1])
            if isinstance(node, dict):
                check(tok in node, "patch op %d %s: parent /%s does not exist in the object as "
                      "sent" % (i, op["path"], where))
                node = node[tok]
            elif isinstance(node, list):
                check(re.fullmatch(r"0|[1-9][0-9]*", tok) and int(tok) < len(node),
                      "patch op %d %s: no array element /%s" % (i, op["path"], where))
                node = node[int(tok)]
            else:
                raise Fail("patch op %d %s: /%s is not a container" % (i, op["path"], where))
        last, value = toks[-1], copy.deepcopy(op["value"])
        if isinstance(node, dict):
            node[last] = value
        elif isinstance(node, list):
            if last == "-":
                node.append(value)
            else:
                check(re.fullmatch(r"0|[1-9][0-9]*", last) and int(last) <= len(node),
                      "patch op %d %s: bad array index" % (i, op["path"]))
                node.insert(int(last), value)
        else:
            raise Fail("patch op %d %s: the parent is not a container" % (i, op["path"]))
    return out


def add(path, value):
    return {"op": "add", "path": path, "value": value}


# ---------------------------------------------------------------------------------------------
# policies

RULE_TYPES = ("gpu-request", "priority-class", "tolerations", "node-selector")
RULE_EXTRA = {
    "gpu-request": ["maxPerPod: 8", "default: {resource: nvidia.com/gpu, count: 2}"],
    "priority-class": ["default: gpu-batch"],
    "tolerations": [],
    "node-selector": [],
}
CLASSES = {"gpu-standard": (1000, "PreemptLowerPriority"), "gpu-batch": (500, "Never")}
GPU_RESOURCE_RE = re.compile(r"nvidia\.com/(gpu|gpu\.shared|mig-.*)")


def ns_for(rtype):
    return "t-" + rtype


def rule_block(rtype, action, enforcement, scoped=True):
    lines = ["- name: %s" % rtype, "  type: %s" % rtype, "  action: %s" % action,
             "  enforcement: %s" % enforcement]
    if scoped:
        lines.append("  match: {namespaces: [%s]}" % ns_for(rtype))
    lines += ["  " + x for x in RULE_EXTRA[rtype]]
    return "\n".join("    " + line for line in lines)


def render_policy(name, blocks, audit_only=False):
    with open(TEMPLATE) as f:
        text = f.read()
    return (text.replace("@NAME@", name).replace("@AUDIT_ONLY@", "true" if audit_only else "false")
            .replace("@RULES@", "\n".join(blocks)))


def rules_dir_with(name, text, fname="policy.yaml"):
    d = tempfile.mkdtemp(prefix="rules-%s-" % name, dir=E.work)
    with open(os.path.join(d, fname), "w") as f:
        f.write(text)
    return d


def install(path, text):
    """Replaces a rule file as an editor or kubectl cp would: a temp file outside the watched
    directory (same file system), then rename into place."""
    fd, tmp = tempfile.mkstemp(dir=E.work, prefix=".edit.")
    with os.fdopen(fd, "w") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.rename(tmp, path)


def line_col(text, needle, offset_in_needle=0):
    """1-based line and column of needle[offset_in_needle] in text."""
    at = text.index(needle) + offset_in_needle
    line = text.count("\n", 0, at) + 1
    col = at - (text.rfind("\n", 0, at) + 1) + 1
    return line, col


# ---------------------------------------------------------------------------------------------
# the objects judged per rule

TOL = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
SEL = {"nvidia.com/gpu.present": "true"}
NOT_READY = {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute",
             "tolerationSeconds": 300}
GPU_C = {"name": "trainer", "image": "nvcr.io/nvidia/pytorch:24.01-py3",
         "resources": {"limits": {"nvidia.com/gpu": "1", "cpu": "4", "memory": "16Gi"},
                       "requests": {"nvidia.com/gpu": "1", "cpu": "2", "memory": "16Gi"}}}
CPU_C = {"name": "web", "image": "nginx:1.27",
         "resources": {"limits": {"cpu": "1", "memory": "1Gi"},
                       "requests": {"cpu": "500m", "memory": "1Gi"}}}
BARE_C = {"name": "web", "image": "nginx:1.27"}
BIG_C = {"name": "trainer", "image": "nvcr.io/nvidia/pytorch:24.01-py3",
         "resources": {"limits": {"nvidia.com/gpu": "9"}}}
CLASS_STD = {"priorityClassName": "gpu-standard", "priority": 1000,
             "preemptionPolicy": "PreemptLowerPriority"}


def pod(name, containers, **spec):
    s = {"containers": copy.deepcopy(containers), "restartPolicy": "Never"}
    s.update(copy.deepcopy(spec))
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "labels": {"app": name}}, "spec": s}


class Case:
    """A pod one rule finds a problem with. what: the problem as the server words it; patch and
    fixed: the expected patch and "patched:" text, or None when the rule cannot patch it."""

    def __init__(self, rule, name, obj, what, patch=None, fixed=None):
        self.rule, self.name, self.obj, self.what = rule, name, obj, what
        self.patch, self.fixed = patch, fixed


GPU_WHAT = ('container "web" targets GPU nodes (nodeSelector nvidia.com/gpu.present=true) but '
            'requests no nvidia.com/gpu; add resources.limits["nvidia.com/gpu"]')
PC_WHAT = ("GPU pod has no priorityClassName, so it cannot preempt anything; set "
           "spec.priorityClassName: gpu-batch")
TOL_WHAT = ("GPU pod does not tolerate the GPU node taint nvidia.com/gpu:NoSchedule, so it "
            "cannot be scheduled on GPU nodes; add a toleration (key nvidia.com/gpu, operator "
            "Exists, effect NoSchedule)")
SEL_WHAT = "GPU pod is not confined to GPU nodes; add nodeSelector nvidia.com/gpu.present=true"
PC_PATCH = [add("/spec/priorityClassName", "gpu-batch"), add("/spec/priority", 500),
            add("/spec/preemptionPolicy", "Never")]

CASES = {
    "gpu-request": [
        Case("gpu-request", "resource-lists",
             pod("web", [CPU_C], tolerations=[TOL], nodeSelector=SEL, **CLASS_STD), GPU_WHAT,
             [add("/spec/containers/0/resources/limits/nvidia.com~1gpu", "2"),
              add("/spec/containers/0/resources/requests/nvidia.com~1gpu", "2")],
             'added 2 nvidia.com/gpu to container "web"'),
        Case("gpu-request", "no-resources",
             pod("web", [BARE_C], tolerations=[TOL], nodeSelector=SEL, **CLASS_STD), GPU_WHAT,
             [add("/spec/containers/0/resources",
                  {"limits": {"nvidia.com/gpu": "2"}, "requests": {"nvidia.com/gpu": "2"}})],
             'added 2 nvidia.com/gpu to container "web"'),
        Case("gpu-request", "over-max",
             pod("big", [BIG_C], tolerations=[TOL], nodeSelector=SEL, **CLASS_STD),
             "pod requests 9 nvidia.com/gpu, more than the maximum of 8 per pod"),
    ],
    "priority-class": [
        Case("priority-class", "no-class",
             pod("trainer", [GPU_C], tolerations=[TOL], nodeSelector=SEL), PC_WHAT, PC_PATCH,
             "set priorityClassName gpu-batch (priority 500, Never)"),
        # as the Priority plugin leaves a pod without a class: priority 0 already set
        Case("priority-class", "priority-defaulted",
             pod("trainer", [GPU_C], tolerations=[TOL], nodeSelector=SEL, priority=0,
                 preemptionPolicy="PreemptLowerPriority"), PC_WHAT, PC_PATCH,
             "set priorityClassName gpu-batch (priority 500, Never)"),
        Case("priority-class", "unknown-class",
             pod("trainer", [GPU_C], tolerations=[TOL], nodeSelector=SEL,
                 priorityClassName="nope"),
             'priorityClassName "nope" is not a known PriorityClass'),
    ],
    "tolerations": [
        Case("tolerations", "none", pod("trainer", [GPU_C], nodeSelector=SEL, **CLASS_STD),
             TOL_WHAT, [add("/spec/tolerations", [TOL])],
             "added tolerations for nvidia.com/gpu:NoSchedule"),
        Case("tolerations", "others",
             pod("trainer", [GPU_C], nodeSelector=SEL, tolerations=[
                 NOT_READY, {"key": "nvidia.com/gpu", "operator": "Exists",
                             "effect": "NoExecute"}], **CLASS_STD),
             TOL_WHAT, [add("/spec/tolerations/-", TOL)],
             "added tolerations for nvidia.com/gpu:NoSchedule"),
    ],
    "node-selector": [
        Case("node-selector", "none", pod("trainer", [GPU_C], tolerations=[TOL], **CLASS_STD),
             SEL_WHAT, [add("/spec/nodeSelector", SEL)],
             "added nodeSelector nvidia.com/gpu.present=true"),
        Case("node-selector", "others",
             pod("trainer", [GPU_C], tolerations=[TOL],
                 nodeSelector={"topology.kubernetes.io/zone": "eu-west-1a"}, **CLASS_STD),
             SEL_WHAT, [add("/spec/nodeSelector/nvidia.com~1gpu.present", "true")],
             "added nodeSelector nvidia.com/gpu.present=true"),
        Case("node-selector", "conflict",
             pod("trainer", [GPU_C], tolerations=[TOL],
                 nodeSelector={"nvidia.com/gpu.present": "false"}, **CLASS_STD),
             "GPU pod is not confined to GPU nodes (its nodeSelector names other nodes); add "
             "nodeSelector nvidia.com/gpu.present=true"),
    ],
}


class Mode:
    def __init__(self, action, enforcement, audit_flag=False, spec_audit=False):
        self.action, self.enforcement = action, enforcement
        self.audit_flag, self.spec_audit = audit_flag, spec_audit
        self.eff = "Audit" if audit_flag or spec_audit else enforcement

    @property
    def name(self):
        base = "%s_%s" % (self.action.lower(), self.enforcement.lower())
        if self.audit_flag:
            return "audit_only_flag/" + base
        if self.spec_audit:
            return "spec_audit_only/" + base
        return base


# ---------------------------------------------------------------------------------------------
# what makes a patched object a valid Kubernetes object beyond its schema


def pod_spec_of(obj, kind):
    return obj["spec"] if kind == "Pod" else obj["spec"]["template"]["spec"]


def k8s_semantics(obj, kind, ops, classes, prefix):
    """Checks the patched object the way the apiserver's admission and validation would."""
    spec = pod_spec_of(obj, kind)
    paths = [op["path"] for op in ops]
    if prefix + "/priorityClassName" in paths:
        cls = spec.get("priorityClassName")
        check(cls in classes, "patched priorityClassName %r is not a class of the policy" % cls)
        # the (reinvoked) Priority plugin refuses a pod whose priority or preemption policy is
        # not its class's: a Pod always carries both, a template only what its author wrote
        if kind == "Pod" or "priority" in spec:
            eq(spec.get("priority"), classes[cls][0], "patched spec.priority for class %s" % cls)
        if kind == "Pod" or "preemptionPolicy" in spec:
            eq(spec.get("preemptionPolicy"), classes[cls][1],
               "patched spec.preemptionPolicy for class %s" % cls)
        if kind != "Pod":
            check(("priority" in spec) == (prefix + "/priority" in paths),
                  "a template's priority was added or left stale: %s" % js(ops))
    tols = spec.get("tolerations") or []
    seen = set()
    for tol in tols:
        key = js(tol)
        check(key not in seen, "duplicate toleration after the patch: %s" % key)
        seen.add(key)
        short = (tol.get("key", ""), tol.get("operator", "Equal"), tol.get("value", ""),
                 tol.get("effect", ""))
        check(short not in seen, "duplicate toleration (key, operator, value, effect) %s"
              % (short,))
        seen.add(short)
    for k, v in (spec.get("nodeSelector") or {}).items():
        check(isinstance(v, str), "nodeSelector %s is not a string: %r" % (k, v))
    for group in ("initContainers", "containers"):
        for c in spec.get(group) or []:
            res = c.get("resources") or {}
            lim, req = res.get("limits") or {}, res.get("requests") or {}
            for r in set(lim) | set(req):
                if GPU_RESOURCE_RE.fullmatch(r) and r in req:
                    # extended resources cannot be overcommitted: request == limit
                    check(r in lim, "container %s requests %s without a limit" % (c["name"], r))
                    eq(req[r], lim[r], "container %s %s request vs limit" % (c["name"], r))
    for op in ops:
        if "/resources" in op["path"]:
            # gpu-request added a GPU: both lists, same count
            c = spec["containers"][0]
            for r, q in c["resources"]["limits"].items():
                if GPU_RESOURCE_RE.fullmatch(r):
                    eq(c["resources"].get("requests", {}).get(r), q,
                       "added GPU request vs limit of container %s" % c["name"])


# ---------------------------------------------------------------------------------------------
# test bookkeeping


class Env:
    pass


E = Env()


class Reporter:
    def __init__(self, selected):
        self.passed = 0
        self.failed = 0
        self.current = "setup"
        self.selected = selected
        self.times = []
        self.lock = threading.Lock()

    def wants(self, name):
        return not self.selected or any(s in name for s in self.selected)

    def run(self, name, fn, *args):
        if not self.wants(name):
            return None
        self.current = name
        t0 = time.monotonic()
        ok = False
        try:
            fn(*args)
            self.ok(name)
            ok = True
        except Fail as e:
            self.not_ok(name, str(e))
        except Exception as e:
            self.not_ok(name, "%s: %s" % (type(e).__name__, e))
            sys.stdout.write(indent("traceback", traceback.format_exc()))
        self.times.append((name, time.monotonic() - t0))
        return ok

    def ok(self, name):
        with self.lock:
            self.passed += 1
            sys.stdout.write("ok - %s\n" % name)
            sys.stdout.flush()

    def not_ok(self, name, reason):
        with self.lock:
            self.failed += 1
            sys.stdout.write("not ok - %s: %s\n" % (name, reason.replace("\n", "\n#   ")))
            sys.stdout.flush()

    def note(self, text):
        sys.stdout.write("# %s\n" % text.replace("\n", "\n#   "))
        sys.stdout.flush()


def group(name, make_server, subtests):
    """Runs subtests [(name, fn(srv, conn))] against one server, each a counted test; the
    server's start and clean exit are one more ("NAME/server")."""
    subtests = [(name + "/" + sn, fn) for sn, fn in subtests if R.wants(name + "/" + sn)]
    if not subtests and not R.wants(name + "/server"):
        return
    t0 = time.monotonic()
    R.current = name + "/server"
    try:
        with make_server() as srv:
            conn = Conn(srv.port)
            try:
                for sname, fn in subtests:
                    if not R.run(sname, fn, srv, conn):
                        conn.close()  # a fresh connection for the next test
            finally:
                conn.close()
        R.ok(name + "/server")
    except Fail as e:
        R.not_ok(name + "/server", str(e))
    except Exception as e:
        R.not_ok(name + "/server", "%s: %s" % (type(e).__name__, e))
        sys.stdout.write(indent("traceback", traceback.format_exc()))
    R.times.append((name, time.monotonic() - t0))


# ---------------------------------------------------------------------------------------------
# 1 and 2: every rule, action and enforcement, also under --audit-only and spec.auditOnly


def judge_case(srv, conn, mode, case):
    """One pod at both endpoints, checked against the eval.h table."""
    rule, ns, what = case.rule, ns_for(case.rule), case.what
    eff = mode.eff
    name = case.obj["metadata"]["name"]
    where = "[%s %s] " % (rule, case.name)
    try:
        # /mutate
        a = admit(srv, conn, "/mutate", case.obj, ns)
        if mode.action == "Mutate" and eff == "Enforce" and case.patch is not None:
            expect(a, patch=case.patch, annotations={rule: "patched: " + case.fixed})
            expect_log(srv, a, [(rule, "Enforce", "patched", case.fixed)], ns, name=name)
            patched = apply_patch(case.obj, a.patch)
            k8s_semantics(patched, "Pod", a.patch, CLASSES, "/spec")
            again = admit(srv, conn, "/mutate", patched, ns)
            expect(again)  # idempotent: nothing more to patch, nothing to say
            expect_log(srv, again, [])
            ok = admit(srv, conn, "/validate", patched, ns)
            expect(ok)
            expect_log(srv, ok, [])
        elif mode.action == "Mutate" and eff == "Warn":
            # what enforcing would do: patch it, or deny it when it cannot be patched
            label = "would patch" if case.patch is not None else "would deny"
            expect(a, warnings=["gpuadmit [%s]: %s: %s" % (rule, label, what)])
            expect_log(srv, a, [(rule, "Warn", "warned", label + ": " + what)], ns, name=name)
        elif mode.action == "Mutate" and eff == "Audit":
            label = "would patch" if case.patch is not None else "would deny"
            expect(a, annotations={rule: label + ": " + what})
            expect_log(srv, a, [(rule, "Audit", label, what)], ns, name=name)
        else:  # Deny rules leave /mutate alone; Mutate+Enforce that cannot patch too
            expect(a)
            expect_log(srv, a, [])
        # /validate
        v = admit(srv, conn, "/validate", case.obj, ns)
        if eff == "Enforce":  # Deny+Enforce, and Mutate+Enforce when the problem is still there
            expect(v, allowed=False, message="gpuadmit: pod %s/%s [%s] %s" % (ns, name, rule, what))
            expect_log(srv, v, [(rule, "Enforce", "denied", what)], ns, name=name)
        elif mode.action == "Deny" and eff == "Warn":
            expect(v, warnings=["gpuadmit [%s]: would deny: %s" % (rule, what)])
            expect_log(srv, v, [(rule, "Warn", "warned", "would deny: " + what)], ns, name=name)
        elif mode.action == "Deny" and eff == "Audit":
            expect(v, annotations={rule: "would deny: " + what})
            expect_log(srv, v, [(rule, "Audit", "would deny", what)], ns, name=name)
        else:  # Mutate+Warn and Mutate+Audit are left to /mutate
            expect(v)
            expect_log(srv, v, [])
    except Fail as e:
        raise Fail(where + str(e))


def mode_group(mode):
    blocks = [rule_block(r, mode.action, mode.enforcement) for r in RULE_TYPES]
    pname = re.sub(r"[^a-z0-9]+", "-", mode.name)
    text = render_policy(pname, blocks, audit_only=mode.spec_audit)
    extra = ["--audit-only"] if mode.audit_flag else []

    def make():
        return Server(rules_dir_with(pname, text), "--cluster-snapshot", E.classes_snapshot,
                      *extra, name=pname)

    def sub(rule):
        def fn(srv, conn):
            eq(srv.serving.get("audit_only"), mode.audit_flag, "serving line audit_only")
            for case in CASES[rule]:
                judge_case(srv, conn, mode, case)
            # a pod of another rule's namespace is not judged by this rule, and a CPU pod
            # that does not target GPU nodes is judged by nothing
            for path in ("/mutate", "/validate"):
                a = admit(srv, conn, path, pod("cpu", [CPU_C]), ns_for(rule))
                expect(a)
                expect_log(srv, a, [])
        return fn

    subs = [(r, sub(r)) for r in RULE_TYPES]
    if mode.eff == "Audit" and mode.action == "Mutate" and mode.enforcement == "Enforce":
        subs.append(("unpatchable_recorded_as_would_deny", audit_unpatchable))
    group(mode.name, make, subs)


def audit_unpatchable(srv, conn):
    """Under audit-only a Mutate+Enforce rule that cannot patch a pod (the fix is not possible)
    would DENY it at /validate when enforced. The would-be decision recorded must say so:
    a "would deny" annotation and decision log line, at either endpoint."""
    bad = []
    for rule in RULE_TYPES:
        for case in CASES[rule]:
            if case.patch is not None:
                continue
            ns = ns_for(rule)
            m = admit(srv, conn, "/mutate", case.obj, ns)
            v = admit(srv, conn, "/validate", case.obj, ns)
            for a in (m, v):
                check(a.allowed and a.patch is None and a.warnings is None,
                      "audit-only answer denies, patches or warns: %r" % a)
            # decision lines are written before the answer is sent: no need to wait
            logs = decisions_of(srv, m, 0) + decisions_of(srv, v, 0)
            got_ann = [(a.path, (a.annotations or {}).get(rule)) for a in (m, v)
                       if (a.annotations or {}).get(rule)]
            got_log = [(ev.get("outcome"), ev.get("message")) for ev in logs]
            want = "would deny: " + case.what
            if not any(val == want for _, val in got_ann) or \
                    ("would deny", case.what) not in got_log:
                bad.append("%s %s: enforcing would deny it at /validate (\"gpuadmit: pod [%s] "
                           "%s\"), but audit-only records annotations %s and log outcomes %s"
                           % (rule, case.name, rule, case.what, js(got_ann),
                              js([o for o, _ in got_log])))
    check(not bad, "would-be denials recorded as something else:\n" + "\n".join(bad))


def audit_predicts_enforcement():
    """The same pods through an enforcing server and an --audit-only server with the same
    all-Mutate policy (every rule in scope): for every rule that patches (at /mutate) or denies
    (at /validate, which sees the patched pod) under enforcement, audit-only must record a
    "would patch" or "would deny" for that rule, and nothing for the other rules."""
    text = render_policy("predict", [rule_block(r, "Mutate", "Enforce", scoped=False)
                                     for r in RULE_TYPES])
    d = rules_dir_with("predict", text)
    pods = [("%s/%s" % (c.rule, c.name), c.obj) for r in RULE_TYPES for c in CASES[r]]
    pods += [("cpu-pod-on-gpu-nodes", pod("web", [CPU_C], nodeSelector=SEL)),
             ("bare-gpu-pod", pod("trainer", [GPU_C])),
             ("settled-gpu-pod", pod("trainer", [GPU_C], tolerations=[TOL], nodeSelector=SEL,
                                     **CLASS_STD))]
    bad = []
    with Server(d, name="predict-enforce") as enf, \
            Server(d, "--audit-only", name="predict-audit") as aud:
        ce, ca = Conn(enf.port), Conn(aud.port)
        try:
            for label, obj in pods:
                m = admit(enf, ce, "/mutate", obj, "ml")
                patched = apply_patch(obj, m.patch) if m.patch else obj
                v = admit(enf, ce, "/validate", patched, "ml")
                want = {}
                for rule, val in (m.annotations or {}).items():
                    check(val.startswith("patched: "), "enforcing annotation %r" % val)
                    want[rule] = "would patch"
                if not v.allowed:
                    for rule in re.findall(r"(?:^gpuadmit: [^\[]*|; )\[([A-Za-z0-9._-]+)\] ",
                                           v.message):
                        want[rule] = "would deny"
                got = {}
                for a in (admit(aud, ca, "/mutate", obj, "ml"),
                          admit(aud, ca, "/validate", obj, "ml")):
                    check(a.allowed and a.patch is None and a.warnings is None,
                          "audit-only answer denies, patches or warns: %r" % a)
                    for rule, val in (a.annotations or {}).items():
                        got[rule] = val.split(":", 1)[0]
                if got != want:
                    bad.append("%s: enforcing %s, audit-only records %s"
                               % (label, js(want), js(got)))
        finally:
            ce.close()
            ca.close()
    check(not bad, "audit-only does not predict enforcement:\n" + "\n".join(bad))


def patch_applier_self_check():
    """The applier used to judge patches fails where the apiserver's would."""
    doc = {"spec": {"containers": [{"name": "a"}], "nodeSelector": {"a/b": "1"}, "priority": 0}}
    out = apply_patch(doc, [add("/spec/nodeSelector/nvidia.com~1gpu.present", "true"),
                            add("/spec/priority", 5), add("/spec/containers/0/x~0y", 1),
                            add("/spec/containers/-", {"name": "b"})])
    eq(out["spec"]["nodeSelector"], {"a/b": "1", "nvidia.com/gpu.present": "true"}, "~1 key")
    eq(out["spec"]["priority"], 5, "add over an existing member")
    eq(out["spec"]["containers"], [{"name": "a", "x~y": 1}, {"name": "b"}], "~0 key and -")
    eq(doc["spec"]["priority"], 0, "the original is not modified")
    for ops in ([add("/spec/tolerations/-", TOL)], [add("/spec/containers/1/resources", {})],
                [add("/status/phase", "x")], [{"op": "replace", "path": "/spec", "value": 1}],
                [add("spec/priority", 1)]):
        try:
            apply_patch(doc, ops)
        except Fail:
            continue
        raise Fail("applier accepted %s" % js(ops))


# ---------------------------------------------------------------------------------------------
# 3: hot reload under load


class Load:
    """n threads sending the same pod to /mutate and /validate alternately, recording for every
    answer (start, end, path, class) where class comes from classify(answer) or is "error"."""

    def __init__(self, srv, obj, ns, classify, n=4):
        self.srv, self.obj, self.ns, self.classify = srv, obj, ns, classify
        self.stop_ev = threading.Event()
        self.lock = threading.Lock()
        self.records = []
        self.errors = []
        self.threads = [threading.Thread(target=self.worker, args=(k,), daemon=True)
                        for k in range(n)]

    def __enter__(self):
        for th in self.threads:
            th.start()
        return self

    def __exit__(self, *exc):
        self.stop_ev.set()
        for th in self.threads:
            th.join(timeout=t(15))
        check(all(not th.is_alive() for th in self.threads), "load threads still running")
        return False

    def worker(self, k):
        c = Conn(self.srv.port)
        i = 0
        try:
            while not self.stop_ev.is_set():
                path = "/mutate" if i % 2 == 0 else "/validate"
                i += 1
                uid = "load-%d-%d-%s" % (k, i, uuid.uuid4().hex[:8])
                t0 = time.monotonic()
                try:
                    c.request("POST", path, body=json.dumps(review_of(self.obj, uid, self.ns))
                              .encode(), headers=JSON_CT)
                    resp = c.getresponse()
                    body = resp.read()
                    a = Answer(resp.status, resp.getheader("Content-Type"), body, uid, path, 0)
                    cls = self.classify(a)
                except Exception as e:
                    cls = "error"
                    with self.lock:
                        self.errors.append("%s %s: %s: %s" % (path, uid, type(e).__name__, e))
                    c.close()
                with self.lock:
                    self.records.append((t0, time.monotonic(), path, cls))
        finally:
            c.close()

    def count(self, cls=None, path=None, after=None):
        with self.lock:
            return sum(1 for r in self.records if (cls is None or r[3] == cls) and
                       (path is None or r[2] == path) and (after is None or r[0] >= after))


def reload_tests():
    rtype = "tolerations"
    case = CASES[rtype][0]
    obj, ns = case.obj, "ml"
    mutate_text = render_policy("reload", [rule_block(rtype, "Mutate", "Enforce", scoped=False)])
    deny_text = render_policy("reload", [rule_block(rtype, "Deny", "Enforce", scoped=False)])
    warn_text = render_policy("reload", [rule_block(rtype, "Mutate", "Warn", scoped=False)])
    deny_msg = "gpuadmit: pod %s/%s [%s] %s" % (ns, case.obj["metadata"]["name"], rtype, case.what)
    st = {}

    def classify(a):
        """'mutate' / 'deny' (the policy the /mutate answer shows), 'same' for /validate,
        which denies under both; anything else is a failure."""
        if a.path == "/validate":
            expect(a, allowed=False, message=deny_msg)
            return "same"
        if a.patch is not None:
            expect(a, patch=case.patch, annotations={rtype: "patched: " + case.fixed})
            return "mutate"
        expect(a)
        return "deny"

    def generation(srv, since=0):
        evs = [ev for ev in srv.events(since)
               if ev.get("msg") in ("policy loaded", "policy reloaded")]
        return evs[-1].get("generation") if evs else None

    def make():
        st["dir"] = rules_dir_with("reload", mutate_text)
        st["file"] = os.path.join(st["dir"], "policy.yaml")
        return Server(st["dir"], name="reload")

    def switch_under_load(srv, conn):
        gen0 = generation(srv)
        check(isinstance(gen0, int), "no generation in the \"policy loaded\" line")
        eq(classify(admit(srv, conn, "/mutate", obj, ns)), "mutate", "class before the switch")
        with Load(srv, obj, ns, classify) as load:
            deadline = time.monotonic() + t(10)
            while load.count() < 40 and time.monotonic() < deadline:
                time.sleep(0.01)
            check(load.count("mutate") >= 10, "only %d answers before the switch"
                  % load.count())
            since = srv.log_size()
            t_switch = time.monotonic()
            install(st["file"], deny_text)
            deadline = t_switch + t(5)
            first_new = None
            while time.monotonic() < deadline:
                with load.lock:
                    news = [r[1] for r in load.records if r[3] == "deny"]
                if news and first_new is None:
                    first_new = min(news)
                if first_new is not None and time.monotonic() > first_new + 0.5 and \
                        load.count("deny", after=first_new) >= 20:
                    break
                time.sleep(0.01)
        check(not load.errors, "%d failed answers during the switch, e.g. %s"
              % (len(load.errors), load.errors[:3]))
        check(first_new is not None, "no answer showed the new policy within %.0f s; log:\n%s"
              % (t(5), srv.log_tail()))
        with load.lock:
            recs = list(load.records)
        old_after = [r for r in recs if r[3] == "mutate" and r[0] > first_new]
        check(not old_after, "%d answers to requests sent after the first new-policy answer "
              "still showed the old policy" % len(old_after))
        last_old_start = max([r[0] for r in recs if r[3] == "mutate"] or [t_switch])
        took_first = first_new - t_switch
        took_all = max(last_old_start, t_switch) - t_switch
        ev = srv.wait_event(lambda e: e.get("msg") == "policy reloaded", since, t(2))
        check(ev is not None, "no \"policy reloaded\" log line")
        check(isinstance(ev.get("generation"), int) and ev["generation"] > gen0,
              "generation %r after the reload, %r before" % (ev.get("generation"), gen0))
        st["gen"] = ev["generation"]
        R.note("reload: %d answers (%d /mutate before, %d after), first new-policy answer "
               "%.0f ms after the rename, last old-policy request sent %.0f ms after it; "
               "generation %d -> %d"
               % (len(recs), sum(1 for r in recs if r[3] == "mutate"),
                  sum(1 for r in recs if r[3] == "deny"), took_first * 1000, took_all * 1000,
                  gen0, ev["generation"]))
        check(took_first < RELOAD_LIMIT_S and took_all < RELOAD_LIMIT_S,
              "the new policy took %.2f s (first) / %.2f s (all) to be in force, limit %.1f s"
              % (took_first, took_all, RELOAD_LIMIT_S))
        check(sum(1 for r in recs if r[3] == "deny") >= 20, "too few answers after the switch")

    def broken(srv, conn, text, line, col, message_part):
        since = srv.log_size()
        with Load(srv, obj, ns, classify) as load:
            install(st["file"], text)
            ev = srv.wait_event(lambda e: e.get("msg") == REFUSED, since, t(5))
            time.sleep(0.3)
        check(ev is not None, "no %r log line within %.0f s; log:\n%s"
              % (REFUSED, t(5), srv.log_tail()))
        eq(ev.get("level"), "error", "level of the refusal")
        err = ev.get("error", "")
        prefix = "%s:%d:%d: " % (st["file"], line, col)
        check(err.startswith(prefix) and message_part in err,
              "refusal error %r; expected %r...%r" % (err, prefix, message_part))
        check(not load.errors, "%d failed answers around the broken edit, e.g. %s"
              % (len(load.errors), load.errors[:3]))
        eq(load.count("mutate"), 0, "answers showing the old (Mutate) policy")
        check(load.count("deny", "/mutate") >= 5, "too few answers around the broken edit")
        check(srv.wait_event(lambda e: e.get("msg") == "policy reloaded", since, 0) is None,
              "a broken policy was reported as reloaded")
        # and still, after the refusal
        eq(classify(admit(srv, conn, "/mutate", obj, ns)), "deny", "policy after the refusal")
        srv.alive()

    def broken_enum(srv, conn):
        check("action: Deny" in deny_text, "template changed")
        text = deny_text.replace("action: Deny", "action: Mutat")
        line, col = line_col(text, "action: Mutat", len("action: "))
        broken(srv, conn, text, line, col,
               'spec.rules[0].action: expected one of Deny, Mutate, got "Mutat"')

    def broken_yaml(srv, conn):
        needle = "type: %s" % rtype
        text = deny_text.replace(needle, needle + ": x")
        line, col = line_col(text, needle + ": x", len(needle))  # the second ':'
        broken(srv, conn, text, line, col, "YAML syntax error")

    def good_after_broken(srv, conn):
        since = srv.log_size()
        install(st["file"], warn_text)
        ev = srv.wait_event(lambda e: e.get("msg") == "policy reloaded", since, t(5))
        check(ev is not None, "the good edit was not reloaded; log:\n%s" % srv.log_tail())
        check(ev.get("generation", 0) > st.get("gen", 0),
              "generation %r after the good edit, %r before" % (ev.get("generation"),
                                                                 st.get("gen")))
        st["gen"] = ev["generation"]
        a = admit(srv, conn, "/mutate", obj, ns)
        expect(a, warnings=["gpuadmit [%s]: would patch: %s" % (rtype, case.what)])
        expect(admit(srv, conn, "/validate", obj, ns))

    def sighup(srv, conn):
        since = srv.log_size()
        srv.proc.send_signal(signal.SIGHUP)
        ev = srv.wait_event(lambda e: e.get("msg") == "policy reloaded", since, t(5))
        check(ev is not None, "SIGHUP did not reload the policy; log:\n%s" % srv.log_tail())
        check(ev.get("generation", 0) > st.get("gen", 0), "generation did not grow on SIGHUP")
        expect(admit(srv, conn, "/mutate", obj, ns),
               warnings=["gpuadmit [%s]: would patch: %s" % (rtype, case.what)])

    group("hot_reload", make, [
        ("mutate_to_deny_under_load", switch_under_load),
        ("broken_enum_refused", broken_enum),
        ("broken_yaml_refused", broken_yaml),
        ("good_edit_after_broken", good_after_broken),
        ("sighup_reloads", sighup),
    ])


# ---------------------------------------------------------------------------------------------
# 4 and 5: the all-fields fixtures, the default policy, the OpenAPI schemas

FIXTURES = [  # file, kind, OpenAPI document, schema name
    ("core.v1.Pod.json", "Pod", "api__v1_openapi.json", "io.k8s.api.core.v1.Pod"),
    ("apps.v1.Deployment.json", "Deployment", "apis__apps__v1_openapi.json",
     "io.k8s.api.apps.v1.Deployment"),
    ("apps.v1.ReplicaSet.json", "ReplicaSet", "apis__apps__v1_openapi.json",
     "io.k8s.api.apps.v1.ReplicaSet"),
    ("apps.v1.StatefulSet.json", "StatefulSet", "apis__apps__v1_openapi.json",
     "io.k8s.api.apps.v1.StatefulSet"),
    ("batch.v1.Job.json", "Job", "apis__batch__v1_openapi.json", "io.k8s.api.batch.v1.Job"),
]


class Schemas:
    def __init__(self):
        self.docs = {}
        self.validators = {}

    def validator(self, doc, name):
        if (doc, name) not in self.validators:
            if doc not in self.docs:
                with open(os.path.join(K8S, "openapi-v3", doc)) as f:
                    self.docs[doc] = json.load(f)["components"]["schemas"]
            root = {"components": {"schemas": self.docs[doc]},
                    "$ref": "#/components/schemas/" + name}
            cls = jsonschema.validators.validator_for({})
            self.validators[(doc, name)] = cls(root)
        return self.validators[(doc, name)]

    def errors(self, kind, obj):
        fx = [f for f in FIXTURES if f[1] == kind][0]
        v = self.validator(fx[2], fx[3])
        return sorted("/%s: %s" % ("/".join(str(p) for p in e.absolute_path), e.message[:200])
                      for e in v.iter_errors(obj))


def fixture(fname):
    with open(os.path.join(K8S, "testdata", fname)) as f:
        return json.load(f)


def unprivileged(spec):
    """The all-fields fixtures run privileged: in a pod that requests GPUs (or is aimed at GPU
    nodes), a privileged container sees every GPU of the node whatever it requests, and the
    gpu-request rule refuses it (rules/README.md, GPU access per container)."""
    for group_ in ("initContainers", "containers"):
        for c in spec.get(group_) or []:
            if isinstance(c.get("securityContext"), dict):
                c["securityContext"]["privileged"] = False


def gpuified(obj, kind):
    """A GPU workload: 1 nvidia.com/gpu on the first container, no priorityClassName."""
    o = copy.deepcopy(obj)
    spec = pod_spec_of(o, kind)
    unprivileged(spec)
    res = spec["containers"][0].setdefault("resources", {})
    res.setdefault("limits", {})["nvidia.com/gpu"] = "1"
    spec.pop("priorityClassName", None)
    return o


def gpu_targeted(obj, kind):
    """Aimed at GPU nodes by its nodeSelector but requesting no GPU, and no priorityClassName."""
    o = copy.deepcopy(obj)
    spec = pod_spec_of(o, kind)
    unprivileged(spec)
    spec.setdefault("nodeSelector", {}).update(SEL)
    spec.pop("priorityClassName", None)
    # a container's claim of a pod's resourceClaims (DRA) is a GPU request too
    spec.pop("resourceClaims", None)
    for group_ in ("initContainers", "containers", "ephemeralContainers"):
        for c in spec.get(group_) or []:
            (c.get("resources") or {}).pop("claims", None)
            for lst in ("limits", "requests"):
                for r in list((c.get("resources") or {}).get(lst) or {}):
                    if GPU_RESOURCE_RE.fullmatch(r):
                        del c["resources"][lst][r]
    return o


def default_policy_facts(text):
    """From rules/default.yaml (block style, as written): the priority classes
    {name: (value, preemptionPolicy)} and the priority-class rule's default class."""
    classes, cur, in_pc = {}, None, False
    for line in text.splitlines():
        s = line.split("#", 1)[0].rstrip()
        if not s:
            continue
        if s == "  priorityClasses:":
            in_pc = True
            continue
        if in_pc and not s.startswith("    "):
            in_pc = False
        if in_pc:
            m = re.fullmatch(r"\s*-?\s*(name|value|preemptionPolicy):\s*(\S+)", s)
            if m and m.group(1) == "name":
                cur = m.group(2)
                classes[cur] = [None, "PreemptLowerPriority"]
            elif m and cur:
                classes[cur][0 if m.group(1) == "value" else 1] = (
                    int(m.group(2)) if m.group(1) == "value" else m.group(2))
    m = re.search(r"type:\s*priority-class\n(?:\s+[a-zA-Z]+:.*\n)*?\s+default:\s*(\S+)", text)
    check(classes and m, "cannot read the priority classes / default class of %s"
          % DEFAULT_RULES)
    return {k: tuple(v) for k, v in classes.items()}, m.group(1)


def schema_tests():
    def unpatched():
        bad = []
        for fname, kind, _, _ in FIXTURES:
            errs = E.schemas.errors(kind, fixture(fname))
            if errs:
                bad.append("%s: %s" % (fname, errs[:5]))
        if bad:
            E.schema_baseline = True
            R.note("fixtures newer than the schemas; patched objects are checked for NEW "
                   "errors only:\n" + "\n".join(bad))

    def broken_rejected():
        p = fixture("core.v1.Pod.json")
        d = fixture("apps.v1.Deployment.json")
        j = fixture("batch.v1.Job.json")
        mutations = [
            ("Pod", p, ["spec", "tolerations"], "nvidia.com/gpu:NoSchedule", "/spec/tolerations"),
            ("Pod", p, ["spec", "priority"], "100000", "/spec/priority"),
            ("Pod", p, ["spec", "nodeSelector"], {"nvidia.com/gpu.present": True},
             "/spec/nodeSelector/nvidia.com/gpu.present"),
            ("Pod", p, ["spec", "tolerations"], [{"key": "nvidia.com/gpu", "effect": 1}],
             "/spec/tolerations/0/effect"),
            ("Deployment", d, ["spec", "template", "spec", "tolerations"], {"key": "x"},
             "/spec/template/spec/tolerations"),
            ("Job", j, ["spec", "template", "spec", "containers"], None,
             "/spec/template/spec/containers"),
        ]
        for kind, base, path, value, where in mutations:
            o = copy.deepcopy(base)
            node = o
            for k in path[:-1]:
                node = node[k]
            node[path[-1]] = value
            errs = E.schemas.errors(kind, o)
            check(any(e.startswith(where + ":") for e in errs),
                  "%s with %s = %s: validator reported %s, expected an error at %s"
                  % (kind, "/".join(path), js(value), errs[:3], where))

    R.run("schema/unpatched_fixtures_validate", unpatched)
    R.run("schema/broken_objects_rejected", broken_rejected)


def check_schema(kind, before, after):
    errs = E.schemas.errors(kind, after)
    if getattr(E, "schema_baseline", False):
        errs = sorted(set(errs) - set(E.schemas.errors(kind, before)))
    check(not errs, "patched %s does not validate against the OpenAPI schema: %s"
          % (kind, errs[:5]))


def fixture_tests():
    with open(DEFAULT_RULES) as f:
        default_text = f.read()

    def make_default():
        return Server(rules_dir_with("default", default_text, "default.yaml"), name="default")

    def as_is(fname, kind):
        def fn(srv, conn):
            obj = fixture(fname)
            ns = obj["metadata"].get("namespace") or "default"
            # no GPU, but privileged with a nodeName (which bypasses taints) and envFrom: it can
            # reach GPU devices around the device plugin; nothing to patch
            a = admit(srv, conn, "/mutate", obj, ns, kind)
            expect(a)
            expect_log(srv, a, [])
            v = admit(srv, conn, "/validate", obj, ns, kind)
            what = "pod" if kind == "Pod" else kind
            check(not v.allowed and v.message.startswith(
                "gpuadmit: %s %s/%s [gpu-request] privileged container \"nameValue\" can reach "
                "GPU devices" % (what, ns, obj["metadata"]["name"])),
                "the all-fields %s at /validate: %r" % (kind, v))
        return fn

    def gpu(fname, kind):
        def fn(srv, conn):

            classes, dflt = default_policy_facts(default_text)
            check(dflt in classes, "default class %s is not in priorityClasses" % dflt)
            obj = gpuified(fixture(fname), kind)
            ns = obj["metadata"]["namespace"]
            prefix = "/spec" if kind == "Pod" else "/spec/template/spec"
            spec = pod_spec_of(obj, kind)
            check(isinstance(spec.get("tolerations"), list) and spec.get("nodeSelector"),
                  "fixture lost its tolerations/nodeSelector")
            want = [add(prefix + "/priorityClassName", dflt)]
            # a Pod always carries priority and preemptionPolicy (the Priority plugin set
            # them); a template only when its author wrote them: either way they must agree
            # with the class, or the Priority plugin refuses the pods
            if kind == "Pod" or "priority" in spec:
                want.append(add(prefix + "/priority", classes[dflt][0]))
            if kind == "Pod" or "preemptionPolicy" in spec:
                want.append(add(prefix + "/preemptionPolicy", classes[dflt][1]))
            want += [add(prefix + "/tolerations/-", TOL),
                     add(prefix + "/nodeSelector/nvidia.com~1gpu.present", "true")]
            a = admit(srv, conn, "/mutate", obj, ns, kind)
            check(a.allowed and a.patch, "no patch for the GPU %s: %r" % (kind, a))
            eq(a.patch, want, "patch of the GPU %s" % kind)
            eq(sorted(a.annotations or {}), ["node-selector", "priority-class", "tolerations"],
               "audit annotation keys")
            check(all(v.startswith("patched: ") for v in a.annotations.values()),
                  "annotations %s" % js(a.annotations))
            patched = apply_patch(obj, a.patch)
            check_schema(kind, obj, patched)
            k8s_semantics(patched, kind, a.patch, classes, prefix)
            pspec = pod_spec_of(patched, kind)
            if "priority" in pspec:
                eq(pspec["priority"], classes[dflt][0], "%s priority after the patch" % kind)
            # the same GPU object left privileged, patched, is refused: a GPU request does
            # not make a privileged container safe (it sees the node's every GPU)
            priv = copy.deepcopy(obj)
            for c in pod_spec_of(priv, kind)["containers"]:
                c.setdefault("securityContext", {})["privileged"] = True
            v = admit(srv, conn, "/validate", apply_patch(priv, a.patch), ns, kind)
            check(not v.allowed and "[gpu-request] privileged container \"%s\" can reach GPU "
                  "devices" % pod_spec_of(priv, kind)["containers"][0]["name"] in v.message,
                  "privileged GPU %s at /validate: %r" % (kind, v))
            # the unpatched object is denied at /validate, naming every rule it breaks
            v = admit(srv, conn, "/validate", obj, ns, kind)
            check(not v.allowed, "unpatched GPU %s allowed at /validate" % kind)
            what = "pod" if kind == "Pod" else kind
            check(v.message.startswith("gpuadmit: %s %s/%s [priority-class] "
                                       % (what, ns, obj["metadata"]["name"])) and
                  "; [tolerations] " in v.message and "; [node-selector] " in v.message,
                  "denial message %r" % v.message)
            # the patched object is settled
            expect(admit(srv, conn, "/mutate", patched, ns, kind))
            # the default policy's capacity rule has no cluster view here: it says so, and only
            # for workloads (a pod gets just its sharing check, which needs the view)
            unchecked = "GPU capacity not checked: no cluster view is configured"
            # (a suspended Job runs no pods: nothing to judge either)
            if kind == "Pod" or obj["spec"].get("suspend") is True:
                expect(admit(srv, conn, "/validate", patched, ns, kind))
            else:
                expect(admit(srv, conn, "/validate", patched, ns, kind),
                       warnings=["gpuadmit [capacity]: " + unchecked],
                       annotations={"capacity": "warned: " + unchecked})
        return fn

    def pod_update(srv, conn):
        # a pod created gated with no GPU marker (never sent), then updated to tolerate the
        # GPU taint and select GPU nodes, which Kubernetes allows while it is gated: judged
        # like a CREATE of the new object at /validate, never patched at /mutate
        before = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "gated",
                                                                 "namespace": "ml"},
                  "spec": {"schedulingGates": [{"name": "wait"}],
                           "containers": [{"name": "web", "image": "nginx"}]}}
        after = copy.deepcopy(before)
        after["spec"].update(tolerations=[TOL], nodeSelector=dict(SEL))
        expect(admit(srv, conn, "/mutate", after, "ml", old=before))
        v = admit(srv, conn, "/validate", after, "ml", old=before)
        eq((v.allowed, v.message), (False, admit(srv, conn, "/validate", after, "ml").message),
           "the UPDATE's verdict is the CREATE's")
        check(v.message.startswith("gpuadmit: pod ml/gated [gpu-request] container \"web\" "
                                   "targets GPU nodes"), "pod UPDATE denial %r" % v.message)
        relabelled = copy.deepcopy(after)
        relabelled["metadata"]["labels"] = {"app": "x"}
        expect(admit(srv, conn, "/validate", relabelled, "ml", old=after))

    def device_plugin_config(srv, conn):
        # the default policy's device-plugin-config rule over TLS: seed 003's time-slicing
        # config passes; NVIDIA/k8s-device-plugin#1433's (renameByDefault under flags) is
        # refused at /validate, naming the data key, line and column; /mutate leaves both alone
        def cm(config):
            return {"apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"name": "time-slicing-config", "namespace": "gpu-operator"},
                    "data": {"any": config}}
        seed = cm("version: v1\nsharing:\n  timeSlicing:\n    resources:\n"
                  "      - name: nvidia.com/gpu\n        replicas: 4\n")
        bad = cm("version: v1\nflags:\n  migStrategy: none\n  renameByDefault: true\n"
                 "sharing:\n  timeSlicing:\n    resources:\n"
                 "      - name: nvidia.com/gpu\n        replicas: 4\n")
        why = ("data[any]:4:3: unknown key \"renameByDefault\" in flags: it belongs in "
               "sharing.timeSlicing or sharing.mps (the device plugin drops it without a word)")
        for obj in (seed, bad):
            expect(admit(srv, conn, "/mutate", obj, "gpu-operator", "ConfigMap"))
        a = admit(srv, conn, "/validate", seed, "gpu-operator", "ConfigMap")
        expect(a)
        expect_log(srv, a, [])
        v = admit(srv, conn, "/validate", bad, "gpu-operator", "ConfigMap")
        expect(v, allowed=False, message="gpuadmit: ConfigMap gpu-operator/time-slicing-config "
               "[device-plugin-config] " + why)
        expect_log(srv, v, [("device-plugin-config", "Enforce", "denied", why)],
                   ns="gpu-operator", kind="ConfigMap", name="time-slicing-config")
        # the same ConfigMap elsewhere is not the rule's
        other = copy.deepcopy(bad)
        other["metadata"]["namespace"] = "ml"
        expect(admit(srv, conn, "/validate", other, "ml", "ConfigMap"))

    def debug(node, allowed):
        def fn(srv, conn):
            # kubectl debug --profile=sysadmin: a privileged ephemeral container; the
            # snapshot's cpu-0 has no GPU label or resource, gpu-1 offers 4 nvidia.com/gpu
            before = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web",
                                                                     "namespace": "ml"},
                      "spec": {"nodeName": node, "containers": [{"name": "web",
                                                                 "image": "nginx"}]}}
            after = copy.deepcopy(before)
            after["spec"]["ephemeralContainers"] = [{"name": "dbg", "image": "busybox",
                                                     "securityContext": {"privileged": True}}]
            v = admit(srv, conn, "/validate", after, "ml", old=before, sub="ephemeralcontainers")
            if allowed:
                expect(v)
            else:
                check(not v.allowed and "privileged ephemeral container \"dbg\" can reach every "
                      "GPU of the node" in (v.message or ""), "debug on %s: %r" % (node, v))
        return fn

    def make_default_view():
        return Server(rules_dir_with("default", default_text, "default.yaml"),
                      "--cluster-snapshot", os.path.join(ROOT, "tests", "data", "snapshots",
                                                         "stall.json"), name="default-view")

    group("debug_on_known_nodes", make_default_view,
          [("cpu_node_allowed", debug("cpu-0", True)), ("gpu_node_refused", debug("gpu-1", False))])

    subs = [("Pod/update_aimed_at_gpu_nodes", pod_update),
            ("ConfigMap/device_plugin_config", device_plugin_config)]
    for fname, kind, _, _ in FIXTURES:
        subs.append(("%s/as_is" % kind, as_is(fname, kind)))
        subs.append(("%s/gpu" % kind, gpu(fname, kind)))
    group("fixtures_default_policy", make_default, subs)

    # the same fixtures aimed at GPU nodes without a GPU request, under a policy that adds one
    mutate_text = render_policy("mutate-all", [rule_block(r, "Mutate", "Enforce", scoped=False)
                                               for r in RULE_TYPES])

    def make_mutate():
        return Server(rules_dir_with("mutate-all", mutate_text), name="mutate-all")

    def gpu_request(fname, kind):
        def fn(srv, conn):
            obj = gpu_targeted(fixture(fname), kind)
            ns = obj["metadata"]["namespace"]
            prefix = "/spec" if kind == "Pod" else "/spec/template/spec"
            res = pod_spec_of(obj, kind)["containers"][0]["resources"]
            check(isinstance(res.get("limits"), dict) and isinstance(res.get("requests"), dict),
                  "fixture's first container lost its resource lists")
            want = [add(prefix + "/containers/0/resources/limits/nvidia.com~1gpu", "2"),
                    add(prefix + "/containers/0/resources/requests/nvidia.com~1gpu", "2"),
                    add(prefix + "/priorityClassName", "gpu-batch")]
            spec = pod_spec_of(obj, kind)
            if kind == "Pod" or "priority" in spec:
                want.append(add(prefix + "/priority", 500))
            if kind == "Pod" or "preemptionPolicy" in spec:
                want.append(add(prefix + "/preemptionPolicy", "Never"))
            want += [add(prefix + "/tolerations/-", TOL)]
            a = admit(srv, conn, "/mutate", obj, ns, kind)
            eq(a.patch, want, "patch of the GPU-targeted %s" % kind)
            eq(sorted(a.annotations or {}), ["gpu-request", "priority-class", "tolerations"],
               "audit annotation keys")
            patched = apply_patch(obj, a.patch)
            check_schema(kind, obj, patched)
            k8s_semantics(patched, kind, a.patch, CLASSES, prefix)
            expect(admit(srv, conn, "/mutate", patched, ns, kind))
            expect(admit(srv, conn, "/validate", patched, ns, kind))
        return fn

    group("fixtures_mutate_policy", make_mutate,
          [("%s/gpu_request_added" % kind, gpu_request(fname, kind))
           for fname, kind, _, _ in FIXTURES])


# ---------------------------------------------------------------------------------------------


def watchdog():
    sys.stdout.write("not ok - %s: suite watchdog: over %d s, killing the servers\n"
                     % (R.current, SUITE_LIMIT_S))
    kill_running()
    sys.stdout.write("e2e-policy: %d passed, %d failed\n" % (R.passed, R.failed + 1))
    sys.stdout.flush()
    if getattr(E, "work", None):
        shutil.rmtree(E.work, ignore_errors=True)
    os._exit(1)


R = Reporter(sys.argv[1:])


def main():
    dog = threading.Timer(SUITE_LIMIT_S, watchdog)
    dog.daemon = True
    dog.start()
    t_suite = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="gpuadmit-e2e-policy-") as work:
        E.work = work
        try:
            check(jsonschema is not None, "python3-jsonschema is not installed")
            check(os.access(BIN, os.X_OK), "GPUADMIT_BIN=%s is not an executable" % BIN)
            E.pki = CertPair(os.path.join(work, "pki"))
            E.schemas = Schemas()
            # the cluster's PriorityClasses: with a view the class rule knows which exist
            E.classes_snapshot = os.path.join(work, "classes.json")
            with open(E.classes_snapshot, "w") as f:
                json.dump({"apiVersion": "v1", "kind": "List", "items": [
                    {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                     "metadata": {"name": n}, "value": v, "preemptionPolicy": p}
                    for n, (v, p) in CLASSES.items()]}, f)
        except Exception as e:
            sys.stdout.write("not ok - setup: %s\ne2e-policy: 0 passed, 1 failed\n" % e)
            return 1
        R.run("patch_applier_self_check", patch_applier_self_check)
        # 1: every rule with every action and enforcement
        for action in ("Deny", "Mutate"):
            for enforcement in ("Enforce", "Warn", "Audit"):
                mode_group(Mode(action, enforcement))
        # 2: --audit-only, and spec.auditOnly, over enforcing (and warning) policies
        for action in ("Deny", "Mutate"):
            for enforcement in ("Enforce", "Warn"):
                mode_group(Mode(action, enforcement, audit_flag=True))
        mode_group(Mode("Mutate", "Enforce", spec_audit=True))
        mode_group(Mode("Deny", "Enforce", spec_audit=True))
        R.run("audit_only_flag/predicts_enforcement", audit_predicts_enforcement)
        # 3: hot reload under load
        reload_tests()
        # 4 and 5: fixtures, schemas, Kubernetes validity
        schema_tests()
        fixture_tests()
    dog.cancel()
    slow = sorted(R.times, key=lambda nt: -nt[1])[:8]
    sys.stdout.write("# slowest: %s\n" % ", ".join("%s %.1fs" % nt for nt in slow))
    sys.stdout.write("# total %.1f s\n" % (time.monotonic() - t_suite))
    sys.stdout.write("e2e-policy: %d passed, %d failed\n" % (R.passed, R.failed))
    return 1 if R.failed else 0


if __name__ == "__main__":
    sys.exit(main())
