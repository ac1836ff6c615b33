#!/usr/bin/python3
"""Tests of the deployment manifests (manifests/): every overlay, rendered as "make manifests"
renders it, against the Kubernetes OpenAPI schemas, the server's routes, and the settings that
keep a webhook outage from locking the cluster; and the webhooks' CEL matchConditions run on
sample objects.

    GPUADMIT_BIN=build/release/gpuadmit /usr/bin/python3 tests/manifests/test_manifests.py

Environment: GPUADMIT_BIN (default build/release/gpuadmit) for "gpuadmit routes";
GPUADMIT_K8S_DATA (default tests/data/k8s, see its README) for the OpenAPI documents; KUBECTL
(default kubectl). With kubectl, each overlay is rendered with "kubectl kustomize" and must equal
its committed rendering in tests/manifests/rendered/ ("make manifests-golden" rewrites them);
without it (Debian has no kubectl with a current kustomize) the committed renderings are
checked instead. Needs python3-yaml and python3-jsonschema, and the binary (gpuadmit certs).
Prints "ok - NAME" or "not ok - NAME: REASON" per check and ends with
"manifests: N passed, M failed"; exit code 1 when any check failed.
"""
import base64
import copy
import fnmatch
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import traceback

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(1, os.path.join(os.path.dirname(HERE), "e2e"))
import cel  # noqa: E402
from common import Fail, check, eq  # noqa: E402

import jsonschema  # noqa: E402
import yaml  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(HERE))
K8S_DATA = os.environ.get("GPUADMIT_K8S_DATA") or os.path.join(ROOT, "tests", "data", "k8s")
BIN = os.environ.get("GPUADMIT_BIN", "build/release/gpuadmit")
KUBECTL = os.environ.get("KUBECTL", "kubectl")
OVERLAYS_DIR = os.path.join(ROOT, "manifests", "overlays")
GOLDEN_DIR = os.path.join(HERE, "rendered")
OPENAPI = os.path.join(K8S_DATA, "openapi-v3")

NAMESPACE = "gpuadmit-system"
SERVICE = "gpuadmit"
MUST_EXCLUDE = ["kube-system", "kube-public", "kube-node-lease", NAMESPACE]
OPT_OUT_LABEL = "gpuadmit.io/exempt"
MAX_TIMEOUT = 5
# Each overlay's mode. A new overlay must be added here (an unknown one fails).
MODES = {"audit": "audit", "enforce": "enforce", "cert-manager": "audit",
         "cert-manager-enforce": "enforce", "enforce-client-auth": "enforce"}
RBAC = {("", "nodes"), ("", "pods"), ("scheduling.k8s.io", "priorityclasses"),
        ("apps", "replicasets"), ("apps", "deployments"), ("apps", "statefulsets"),
        ("batch", "jobs"), ("", "configmaps"), ("karpenter.sh", "nodepools")}
# the only rule limited to names: Cluster Autoscaler's status and the device plugin configs the
# default policy names (rules/default.yaml), never every ConfigMap
RBAC_NAMES = {("", "configmaps"): ["cluster-autoscaler-status", "time-slicing-config",
                                   "nvidia-device-plugin-config"]}

CORE = "api__v1_openapi.json"
SCHEMAS = {
    ("v1", "Namespace"): (CORE, "io.k8s.api.core.v1.Namespace"),
    ("v1", "ServiceAccount"): (CORE, "io.k8s.api.core.v1.ServiceAccount"),
    ("v1", "ConfigMap"): (CORE, "io.k8s.api.core.v1.ConfigMap"),
    ("v1", "Secret"): (CORE, "io.k8s.api.core.v1.Secret"),
    ("v1", "Service"): (CORE, "io.k8s.api.core.v1.Service"),
    ("v1", "ResourceQuota"): (CORE, "io.k8s.api.core.v1.ResourceQuota"),
    ("apps/v1", "Deployment"): ("apis__apps__v1_openapi.json", "io.k8s.api.apps.v1.Deployment"),
    ("policy/v1", "PodDisruptionBudget"): ("apis__policy__v1_openapi.json",
                                           "io.k8s.api.policy.v1.PodDisruptionBudget"),
    ("rbac.authorization.k8s.io/v1", "ClusterRole"): (
        "apis__rbac.authorization.k8s.io__v1_openapi.json", "io.k8s.api.rbac.v1.ClusterRole"),
    ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"): (
        "apis__rbac.authorization.k8s.io__v1_openapi.json",
        "io.k8s.api.rbac.v1.ClusterRoleBinding"),
    # the chart's certificate hook (charts/gpuadmit, certificates.generated)
    ("rbac.authorization.k8s.io/v1", "Role"): (
        "apis__rbac.authorization.k8s.io__v1_openapi.json", "io.k8s.api.rbac.v1.Role"),
    ("rbac.authorization.k8s.io/v1", "RoleBinding"): (
        "apis__rbac.authorization.k8s.io__v1_openapi.json", "io.k8s.api.rbac.v1.RoleBinding"),
    ("batch/v1", "Job"): ("apis__batch__v1_openapi.json", "io.k8s.api.batch.v1.Job"),
    ("scheduling.k8s.io/v1", "PriorityClass"): (
        "apis__scheduling.k8s.io__v1_openapi.json", "io.k8s.api.scheduling.v1.PriorityClass"),
    ("admissionregistration.k8s.io/v1", "MutatingWebhookConfiguration"): (
        "apis__admissionregistration.k8s.io__v1_openapi.json",
        "io.k8s.api.admissionregistration.v1.MutatingWebhookConfiguration"),
    ("admissionregistration.k8s.io/v1", "ValidatingWebhookConfiguration"): (
        "apis__admissionregistration.k8s.io__v1_openapi.json",
        "io.k8s.api.admissionregistration.v1.ValidatingWebhookConfiguration"),
    ("admissionregistration.k8s.io/v1", "ValidatingAdmissionPolicy"): (
        "apis__admissionregistration.k8s.io__v1_openapi.json",
        "io.k8s.api.admissionregistration.v1.ValidatingAdmissionPolicy"),
    ("admissionregistration.k8s.io/v1", "ValidatingAdmissionPolicyBinding"): (
        "apis__admissionregistration.k8s.io__v1_openapi.json",
        "io.k8s.api.admissionregistration.v1.ValidatingAdmissionPolicyBinding"),
}
# cert-manager's CRDs have no schema in tests/data/k8s: checked by hand (check_cert_manager_object).
CERT_MANAGER_KINDS = {("cert-manager.io/v1", "Issuer"), ("cert-manager.io/v1", "Certificate")}


RESULTS = {"passed": 0, "failed": 0}


def run(name, fn, *args):
    try:
        fn(*args)
    except Fail as e:
        RESULTS["failed"] += 1
        print("not ok - %s: %s" % (name, e))
    except Exception:
        RESULTS["failed"] += 1
        print("not ok - %s: %s" % (name, traceback.format_exc().strip().replace("\n", "\n#   ")))
    else:
        RESULTS["passed"] += 1
        print("ok - %s" % name)


# ---------------------------------------------------------------------------------------------
# rendering, as "make manifests" does it


def overlays():
    return sorted(d for d in os.listdir(OVERLAYS_DIR)
                  if os.path.isfile(os.path.join(OVERLAYS_DIR, d, "kustomization.yaml")))


def have_kubectl():
    return shutil.which(KUBECTL) is not None


def kustomize(overlay):
    r = subprocess.run([KUBECTL, "kustomize", os.path.join(OVERLAYS_DIR, overlay)],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
    if r.returncode != 0:
        raise Fail("kubectl kustomize %s: %s" % (overlay, r.stderr.decode()[-2000:]))
    return r.stdout.decode()


def golden(overlay):
    path = os.path.join(GOLDEN_DIR, overlay + ".yaml")
    check(os.path.isfile(path), "%s is missing: run make manifests-golden"
          % os.path.relpath(path, ROOT))
    with open(path) as f:
        return f.read()


def fill(raw, certs):
    r = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "manifests-fill.py"), certs],
                       input=raw.encode(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       timeout=60)
    if r.returncode != 0:
        raise Fail("manifests-fill.py: %s" % r.stderr.decode())
    return r.stdout.decode()


def make_certs(directory, namespace=None):
    r = subprocess.run([os.path.abspath(BIN), "certs", "--service", SERVICE, "--namespace",
                        namespace or NAMESPACE, "--out", directory],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
    if r.returncode != 0:
        raise RuntimeError("gpuadmit certs failed: %s" % r.stderr.decode())


def load_docs(text):
    return [d for d in yaml.safe_load_all(text) if d is not None]


def by_kind(docs, kind):
    return [d for d in docs if d.get("kind") == kind]


def one(docs, kind):
    found = by_kind(docs, kind)
    eq(len(found), 1, "number of %s objects" % kind)
    return found[0]


def webhooks(docs):
    """(config kind, webhook) for every webhook of both configurations."""
    out = []
    for kind in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"):
        for w in one(docs, kind).get("webhooks") or []:
            out.append((kind, w))
    return out


# Requests no matchCondition can tell GPU from non-GPU: a Scale has no template and an HPA names
# its target, not GPUs. Their entries have no conditions and must never fail closed.
UNFILTERABLE = {"deployments/scale", "replicasets/scale", "statefulsets/scale",
                "horizontalpodautoscalers"}


# The device plugin's sharing config (the device-plugin-config rule): ConfigMaps in kube-system
# and gpu-operator, which every other entry excludes. Its matchConditions name each ConfigMap,
# so it needs no namespaceSelector, and it fails open in every overlay.
CONFIGMAPS_ENTRY = "configmaps.validate.gpuadmit.io"


def is_configmaps(w):
    return any(r == "configmaps" for rule in w.get("rules") or []
               for r in rule.get("resources") or [])


def is_unfiltered(w):
    return any(r in UNFILTERABLE for rule in w.get("rules") or []
               for r in rule.get("resources") or [])


# The policy the checks compare with: rules/default.yaml, or, in the renamed-namespace pass,
# the one inside the rendered ConfigMap (make manifests NAMESPACE= moves its exclude list).
POLICY_TEXT = None


def read_policy():
    if POLICY_TEXT is not None:
        return yaml.safe_load(POLICY_TEXT)
    with open(os.path.join(ROOT, "rules", "default.yaml")) as f:
        return yaml.safe_load(f)


# ---------------------------------------------------------------------------------------------
# 1. schemas

_DOCUMENTS = {}


# Fields newer than the copied schemas (their core and apps documents are of Kubernetes 1.26),
# which the manifests use on purpose; any other unknown field is an error.
NEWER_FIELDS = {
    "io.k8s.api.core.v1.LifecycleHandler": ["sleep"],  # preStop sleep, 1.30
}


def strict(schema):
    """The schema with additionalProperties: false on every object that lists its properties and
    does not say otherwise: the published schemas accept any unknown field, so a misspelt key
    (failurPolicy) would pass unnoticed."""
    if isinstance(schema, list):
        return [strict(x) for x in schema]
    if not isinstance(schema, dict):
        return schema
    out = {k: strict(v) for k, v in schema.items()}
    if ("properties" in out and "additionalProperties" not in out
            and not out.get("x-kubernetes-preserve-unknown-fields")):
        out["additionalProperties"] = False
    return out


def validator(document, name):
    if document not in _DOCUMENTS:
        with open(os.path.join(OPENAPI, document)) as f:
            schemas = json.load(f)["components"]["schemas"]
        for sname, fields in NEWER_FIELDS.items():
            for field in fields:
                if sname in schemas:
                    schemas[sname].setdefault("properties", {}).setdefault(field, {})
        _DOCUMENTS[document] = {k: strict(v) for k, v in schemas.items()}
    root = {"components": {"schemas": _DOCUMENTS[document]},
            "$ref": "#/components/schemas/" + name}
    cls = jsonschema.validators.validator_for({})
    return cls(root)


def schema_errors(obj):
    key = (obj.get("apiVersion"), obj.get("kind"))
    if key not in SCHEMAS:
        return ["no schema known for %s %s" % key]
    v = validator(*SCHEMAS[key])
    return ["%s: %s" % ("/".join(str(p) for p in e.absolute_path) or "(root)", e.message)
            for e in sorted(v.iter_errors(obj), key=lambda e: list(map(str, e.path)))]


def check_cert_manager_object(obj):
    """cert-manager.io/v1 Issuer and Certificate, by hand: the fields their CRDs require and the
    ones this chain relies on."""
    meta = obj.get("metadata") or {}
    check(meta.get("name") and meta.get("namespace") == NAMESPACE,
          "%s needs a name and namespace %s" % (obj["kind"], NAMESPACE))
    spec = obj.get("spec")
    check(isinstance(spec, dict), "%s %s: spec missing" % (obj["kind"], meta.get("name")))
    if obj["kind"] == "Issuer":
        kinds = [k for k in ("selfSigned", "ca", "acme", "vault", "venafi") if k in spec]
        eq(len(kinds), 1, "Issuer %s: issuer types" % meta["name"])
        if "ca" in spec:
            check(isinstance(spec["ca"].get("secretName"), str), "CA Issuer without secretName")
        return
    check(isinstance(spec.get("secretName"), str) and spec["secretName"],
          "Certificate %s: secretName (required)" % meta["name"])
    ref = spec.get("issuerRef")
    check(isinstance(ref, dict) and isinstance(ref.get("name"), str),
          "Certificate %s: issuerRef.name (required)" % meta["name"])
    check(ref.get("kind", "Issuer") in ("Issuer", "ClusterIssuer"), "issuerRef.kind")
    check(spec.get("commonName") or spec.get("dnsNames"),
          "Certificate %s: commonName or dnsNames" % meta["name"])
    pk = spec.get("privateKey") or {}
    eq((pk.get("algorithm"), pk.get("size")), ("ECDSA", 256),
       "Certificate %s privateKey" % meta["name"])
    if spec.get("isCA"):
        # a CA renewed with a new key would leave the pods' serving certificate unverifiable
        # until they reload it: see the comment in components/cert-manager
        eq(pk.get("rotationPolicy"), "Never", "CA Certificate %s rotationPolicy" % meta["name"])
    for field in ("duration", "renewBefore"):
        if field in spec:
            check(isinstance(spec[field], str) and spec[field].endswith("h"),
                  "Certificate %s: %s as hours" % (meta["name"], field))


def t_schemas(name, docs):
    problems = []
    for d in docs:
        key = (d.get("apiVersion"), d.get("kind"))
        what = "%s %s" % (d.get("kind"), (d.get("metadata") or {}).get("name"))
        if key in CERT_MANAGER_KINDS:
            try:
                check_cert_manager_object(d)
            except Fail as e:
                problems.append("%s: %s" % (what, e))
            continue
        problems += ["%s: %s" % (what, e) for e in schema_errors(d)]
    check(not problems, "\n#   ".join([""] + problems))


def t_validator_rejects():
    """The schema check can fail: broken objects are refused, unknown kinds too."""
    with open(os.path.join(K8S_DATA, "testdata",
                           "admissionregistration.k8s.io.v1.ValidatingWebhookConfiguration.json")) as f:
        fixture = json.load(f)
    eq(schema_errors(fixture), [], "the upstream fixture")
    broken = copy.deepcopy(fixture)
    del broken["webhooks"][0]["sideEffects"]
    check(any("sideEffects" in e for e in schema_errors(broken)),
          "a webhook without sideEffects was accepted")
    broken = copy.deepcopy(fixture)
    broken["webhooks"][0]["clientConfig"]["service"]["port"] = "443"
    check(schema_errors(broken), "a string service port was accepted")
    dep = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "x"},
           "spec": {"replicas": "two", "selector": {}, "template": {}}}
    check(schema_errors(dep), "replicas: \"two\" was accepted")
    check(schema_errors({"apiVersion": "v9", "kind": "Gadget"}), "an unknown kind was accepted")
    broken = copy.deepcopy(fixture)
    broken["webhooks"][0]["failurPolicy"] = "Fail"
    check(any("failurPolicy" in e for e in schema_errors(broken)),
          "a misspelt key (failurPolicy) was accepted")
    dep = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "x"},
           "spec": {"selector": {}, "template": {"spec": {"containers": [
               {"name": "c", "securityContex": {}}]}}}}
    check(any("securityContex" in e for e in schema_errors(dep)),
          "a misspelt container key (securityContex) was accepted")


# ---------------------------------------------------------------------------------------------
# 2. routes


def route_tuples(kind, rule, where):
    out = set()
    for field in ("apiGroups", "apiVersions", "resources", "operations"):
        check(isinstance(rule.get(field), list) and rule[field],
              "%s: rule without %s" % (where, field))
        bad = [x for x in rule[field] if "*" in x]
        check(not bad, "%s: wildcard %s in %s" % (where, bad, field))
    for g in rule["apiGroups"]:
        for v in rule["apiVersions"]:
            for r in rule["resources"]:
                for op in rule["operations"]:
                    out.add((kind, g, v, r, op))
    return out


def server_routes():
    r = subprocess.run([BIN, "routes"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       timeout=30, cwd=ROOT)
    check(r.returncode == 0, "%s routes: exit code %d: %s" % (BIN, r.returncode,
                                                            r.stderr.decode()[-500:]))
    routes = json.loads(r.stdout)
    out = set()
    for kind, key in (("mutating", "mutating"), ("validating", "validating")):
        check(isinstance(routes.get(key), list) and routes[key], "routes: no %s list" % key)
        for rule in routes[key]:
            out |= route_tuples(kind, rule, "gpuadmit routes")
    return out


def t_routes(docs, served):
    have, owner = set(), {}
    for kind, w in webhooks(docs):
        short = "mutating" if kind.startswith("Mutating") else "validating"
        for rule in w.get("rules") or []:
            for t in route_tuples(short, rule, w["name"]):
                check(t not in owner, "%s is in both %s and %s: the server would be called twice"
                      % (t, owner.get(t), w["name"]))
                owner[t] = w["name"]
                have.add(t)
    missing, extra = sorted(served - have), sorted(have - served)
    lines = ["not in the manifests (the server handles them): %s" % (t,) for t in missing]
    lines += ["in the manifests but not handled by the server: %s" % (t,) for t in extra]
    check(not lines, "\n#   ".join([""] + lines))


# ---------------------------------------------------------------------------------------------
# 3. lock-out, wiring and hardening


def pod_template(docs):
    return one(docs, "Deployment")["spec"]["template"]


def container(docs):
    cs = pod_template(docs)["spec"]["containers"]
    eq(len(cs), 1, "containers")
    return cs[0]


def arg_value(args, flag):
    check(flag in args, "no %s in the args %s" % (flag, args))
    i = args.index(flag)
    check(i + 1 < len(args), "%s has no value" % flag)
    return args[i + 1]


def t_webhook_settings(mode, docs):
    check(mode in ("audit", "enforce"), "mode %r" % mode)
    policy_ns = read_policy()["spec"]["exclude"]["namespaces"]
    whs = webhooks(docs)
    check(len(whs) >= 2, "no webhooks")
    names = [w["name"] for _, w in whs]
    eq(len(set(names)), len(names), "webhook names unique")
    for kind, w in whs:
        n = w["name"]
        check(len(n.split(".")) >= 3, "%s: a webhook name needs three segments" % n)
        eq(w.get("admissionReviewVersions"), ["v1"], n + " admissionReviewVersions")
        eq(w.get("sideEffects"), "None", n + " sideEffects")
        eq(w.get("matchPolicy"), "Equivalent", n + " matchPolicy")
        check(isinstance(w.get("timeoutSeconds"), int) and 1 <= w["timeoutSeconds"] <= MAX_TIMEOUT,
              "%s timeoutSeconds %r (1..%d)" % (n, w.get("timeoutSeconds"), MAX_TIMEOUT))
        svc = (w.get("clientConfig") or {}).get("service") or {}
        want_path = "/mutate" if kind.startswith("Mutating") else "/validate"
        eq((svc.get("name"), svc.get("namespace"), svc.get("port"), svc.get("path")),
           (SERVICE, NAMESPACE, 443, want_path), n + " clientConfig.service")
        check("url" not in w["clientConfig"], n + ": clientConfig.url")
        if kind.startswith("Mutating"):
            eq(w.get("reinvocationPolicy"), "IfNeeded", n + " reinvocationPolicy")
        for sel in ("namespaceSelector", "objectSelector"):
            for e in (w.get(sel) or {}).get("matchExpressions") or []:
                check(e.get("operator") in ("In", "NotIn", "Exists", "DoesNotExist"),
                      "%s %s: operator %r" % (n, sel, e.get("operator")))
                check(bool(e.get("values")) == (e.get("operator") in ("In", "NotIn")),
                      "%s %s: values go with In/NotIn only" % (n, sel))
        if is_configmaps(w):
            eq(n, CONFIGMAPS_ENTRY, "the ConfigMaps entry's name")
            check("namespaceSelector" not in w, n + ": a namespaceSelector (the ConfigMaps live "
                  "in the namespaces the others exclude; matchConditions name each one)")
            eq([c.get("name") for c in w.get("matchConditions") or []], ["device-plugin-config"],
               n + " matchConditions")
            eq(w.get("failurePolicy"), "Ignore", n + " failurePolicy (fails open everywhere)")
            for rule in w["rules"]:
                eq((rule.get("resources"), sorted(rule.get("operations") or [])),
                   (["configmaps"], ["CREATE", "UPDATE"]), n + " rules (no DELETE: null object)")
            oexprs = (w.get("objectSelector") or {}).get("matchExpressions") or []
            check({"key": OPT_OUT_LABEL, "operator": "NotIn", "values": ["true"]} in oexprs,
                  "%s: no objectSelector opt-out %s NotIn [true]" % (n, OPT_OUT_LABEL))
            continue
        # namespaces
        exprs = (w.get("namespaceSelector") or {}).get("matchExpressions") or []
        notin = [e for e in exprs if e.get("key") == "kubernetes.io/metadata.name"
                 and e.get("operator") == "NotIn"]
        eq(len(notin), 1, n + " NotIn on kubernetes.io/metadata.name")
        values = notin[0].get("values") or []
        for ns in MUST_EXCLUDE:
            check(ns in values, "%s does not exclude namespace %s" % (n, ns))
        eq(sorted(values), sorted(policy_ns), n + " excluded namespaces vs rules/default.yaml")
        check(not (w.get("namespaceSelector") or {}).get("matchLabels"),
              n + ": matchLabels would narrow the exclusion")
        # opt-out
        oexprs = (w.get("objectSelector") or {}).get("matchExpressions") or []
        check({"key": OPT_OUT_LABEL, "operator": "NotIn", "values": ["true"]} in oexprs,
              "%s: no objectSelector opt-out %s NotIn [true]" % (n, OPT_OUT_LABEL))
        # conditions and failure policy
        conds = w.get("matchConditions") or []
        check(len(conds) <= 64, n + ": more than 64 matchConditions")
        if is_unfiltered(w):
            eq(w.get("failurePolicy"), "Ignore", n + " (scale/HPA) failurePolicy")
            check(all(r in UNFILTERABLE for rule in w["rules"] for r in rule["resources"]),
                  n + ": an unfiltered entry must hold only scale subresources and HPAs")
        else:
            check(conds, n + ": no matchConditions: every object of these kinds would be sent")
            check(any(c.get("name") == "gpu" for c in conds), n + ": no matchCondition 'gpu'")
        if mode == "audit":
            eq(w.get("failurePolicy"), "Ignore", "%s failurePolicy in audit mode" % n)
        elif kind.startswith("Mutating"):
            eq(w.get("failurePolicy"), "Ignore", "%s failurePolicy (mutation fails open)" % n)
        elif not is_unfiltered(w):
            eq(w.get("failurePolicy"), "Fail", "%s failurePolicy in enforce mode" % n)
    args = container(docs).get("args") or []
    if mode == "audit":
        check("--audit-only" in args, "audit mode without --audit-only: %s" % args)
    else:
        check("--audit-only" not in args, "enforce mode with --audit-only")


def default_policy_files():
    """The rules ConfigMap's data of every rendering: rules/default.yaml, with the webhook's
    namespace where it says gpuadmit-system (manifests-fill.py, the chart, move it)."""
    with open(os.path.join(ROOT, "rules", "default.yaml")) as f:
        return {"default.yaml": re.sub(r"(?<![\w.-])gpuadmit-system(?![\w.-])", NAMESPACE,
                                       f.read())}


def t_deployment(docs, policy=None, tls_secret="gpuadmit-tls"):
    """policy: the rules ConfigMap's expected data (default_policy_files()), or the name of a
    ConfigMap that is not rendered (one of the user's own)."""
    if policy is None:
        policy = default_policy_files()
    dep = one(docs, "Deployment")
    spec, tpl = dep["spec"], pod_template(docs)
    pod, c = tpl["spec"], container(docs)
    eq(dep["metadata"].get("namespace"), NAMESPACE, "Deployment namespace")
    eq(spec.get("replicas"), 2, "replicas")
    sel = spec["selector"]["matchLabels"]
    check(all(tpl["metadata"]["labels"].get(k) == v for k, v in sel.items()),
          "the selector does not select the template")
    eq(pod.get("priorityClassName"), "system-cluster-critical", "priorityClassName")
    spread = [t.get("topologyKey") for t in pod.get("topologySpreadConstraints") or []]
    anti = ((pod.get("affinity") or {}).get("podAntiAffinity") or {})
    check("kubernetes.io/hostname" in spread or anti, "replicas are not spread across nodes")
    for t in pod.get("topologySpreadConstraints") or []:
        check(t["labelSelector"]["matchLabels"] == sel, "a spread constraint selects other pods")
    # image
    image = c.get("image", "")
    name, _, tag = image.rpartition(":")
    check(name and tag and "/" not in tag and tag != "latest",
          "image %r needs a concrete tag" % image)
    eq(c.get("imagePullPolicy"), "IfNotPresent", "imagePullPolicy")
    # hardening
    psc, sc = pod.get("securityContext") or {}, c.get("securityContext") or {}
    check(psc.get("runAsNonRoot") is True or sc.get("runAsNonRoot") is True, "runAsNonRoot")
    check((sc.get("runAsUser") or psc.get("runAsUser")) not in (None, 0), "runAsUser non-zero")
    eq(sc.get("readOnlyRootFilesystem"), True, "readOnlyRootFilesystem")
    eq(sc.get("allowPrivilegeEscalation"), False, "allowPrivilegeEscalation")
    check(sc.get("privileged") in (None, False), "privileged")
    eq((sc.get("capabilities") or {}).get("drop"), ["ALL"], "capabilities.drop")
    check(not (sc.get("capabilities") or {}).get("add"), "capabilities.add")
    seccomp = (sc.get("seccompProfile") or psc.get("seccompProfile") or {}).get("type")
    eq(seccomp, "RuntimeDefault", "seccompProfile")
    check(not pod.get("hostNetwork") and not pod.get("hostPID"), "host namespaces")
    # resources
    res = c.get("resources") or {}
    for part in ("requests", "limits"):
        for r in ("cpu", "memory"):
            check(r in (res.get(part) or {}), "resources.%s.%s missing" % (part, r))
    # args, ports, probes
    args = c.get("args") or []
    eq(args[:1], ["serve"], "first argument")
    listen = arg_value(args, "--listen")
    eq(listen, "0.0.0.0:8443", "--listen")
    ports = [p["containerPort"] for p in c.get("ports") or []]
    eq(ports, [8443], "containerPort")
    for probe, path in (("livenessProbe", "/healthz"), ("readinessProbe", "/readyz")):
        get = (c.get(probe) or {}).get("httpGet") or {}
        eq((get.get("path"), get.get("port"), get.get("scheme")), (path, 8443, "HTTPS"), probe)
    grace = int(arg_value(args, "--shutdown-grace")) if "--shutdown-grace" in args else 25
    sleep = (((c.get("lifecycle") or {}).get("preStop") or {}).get("sleep") or {}).get("seconds", 0)
    check(pod.get("terminationGracePeriodSeconds", 30) > grace + sleep,
          "terminationGracePeriodSeconds %s <= preStop %s + --shutdown-grace %s"
          % (pod.get("terminationGracePeriodSeconds", 30), sleep, grace))
    # volumes: TLS Secret and rules ConfigMap where the args say
    mounts = {m["name"]: m for m in c.get("volumeMounts") or []}
    vols = {v["name"]: v for v in pod.get("volumes") or []}
    for flag, key in (("--tls-cert", "tls.crt"), ("--tls-key", "tls.key")):
        path = arg_value(args, flag)
        eq(os.path.basename(path), key, flag)
        m = [m for m in mounts.values() if m["mountPath"] == os.path.dirname(path)]
        check(m and m[0].get("readOnly"), "%s: no read-only mount at %s" % (flag, path))
        eq(vols[m[0]["name"]].get("secret", {}).get("secretName"), tls_secret, flag + " Secret")
    if "--client-ca" in args:
        # the bundle the operator creates, mounted read-only where the flag points
        path = arg_value(args, "--client-ca")
        eq(os.path.basename(path), "ca.crt", "--client-ca file")
        m = [m for m in mounts.values() if m["mountPath"] == os.path.dirname(path)]
        check(m and m[0].get("readOnly"), "--client-ca: no read-only mount at %s" % path)
        eq(vols[m[0]["name"]].get("configMap", {}).get("name"), "gpuadmit-client-ca",
           "--client-ca ConfigMap")
    rules_dir = arg_value(args, "--rules")
    m = [m for m in mounts.values() if m["mountPath"] == rules_dir]
    check(m, "no mount at --rules %s" % rules_dir)
    cm = vols[m[0]["name"]].get("configMap", {}).get("name")
    cms = [d for d in by_kind(docs, "ConfigMap") if d["metadata"]["name"] == cm]
    if isinstance(policy, str):
        eq(cm, policy, "the rules volume's ConfigMap")
        check(not cms and not [d for d in by_kind(docs, "ConfigMap")
                               if d["metadata"]["name"].startswith("gpuadmit-rules")],
              "ConfigMap %s is the user's: a rules ConfigMap is rendered all the same" % cm)
    else:
        check(cms, "the rules volume names ConfigMap %s, which is not rendered" % cm)
        eq(cms[0]["metadata"].get("namespace"), NAMESPACE, "rules ConfigMap namespace")
        eq(cms[0].get("data"), policy, "rules ConfigMap data")
    # service account
    sa = pod.get("serviceAccountName")
    check(any(d["metadata"]["name"] == sa and d["metadata"].get("namespace") == NAMESPACE
              for d in by_kind(docs, "ServiceAccount")), "ServiceAccount %s not rendered" % sa)


def t_service_pdb(docs):
    svc = one(docs, "Service")
    tpl = pod_template(docs)
    eq((svc["metadata"]["name"], svc["metadata"].get("namespace")), (SERVICE, NAMESPACE),
       "Service name")
    ports = [(p.get("port"), p.get("targetPort")) for p in svc["spec"]["ports"]]
    eq(ports, [(443, 8443)], "Service ports")
    labels = tpl["metadata"]["labels"]
    check(all(labels.get(k) == v for k, v in svc["spec"]["selector"].items()),
          "the Service does not select the webhook's pods")
    pdb = one(docs, "PodDisruptionBudget")
    eq(pdb["metadata"].get("namespace"), NAMESPACE, "PDB namespace")
    sel = pdb["spec"]["selector"]
    check(set(sel) == {"matchLabels"}, "PDB selector: matchLabels only")
    check(sel["matchLabels"] and all(labels.get(k) == v for k, v in sel["matchLabels"].items()),
          "the PDB does not select the webhook's pods")
    check(pdb["spec"].get("minAvailable") == 1 or pdb["spec"].get("maxUnavailable") == 1,
          "PDB: one replica at a time")


def t_rbac(docs):
    role = one(docs, "ClusterRole")
    got = set()
    for rule in role["rules"]:
        eq(sorted(rule["verbs"]), ["get", "list", "watch"], "verbs for %s" % rule["resources"])
        check(not rule.get("nonResourceURLs"), "unexpected rule fields")
        for g in rule["apiGroups"]:
            for r in rule["resources"]:
                check((g, r) not in got, "%s/%s listed twice" % (g, r))
                got.add((g, r))
                eq(rule.get("resourceNames"), RBAC_NAMES.get((g, r)),
                   "resourceNames of %s/%s" % (g, r))
    eq(got, RBAC, "ClusterRole resources")
    # every device plugin config the default policy names is readable by name (the view lists
    # it with a metadata.name field selector: RBAC's resourceNames match that)
    named = {cm["name"] for r in read_policy()["spec"]["rules"]
             if r.get("type") == "device-plugin-config"
             for cm in r["configMaps"]}
    check(named and named <= set(RBAC_NAMES[("", "configmaps")]),
          "device plugin configs the policy names (%s) not all readable" % sorted(named))
    binding = one(docs, "ClusterRoleBinding")
    eq(binding["roleRef"], {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                            "name": role["metadata"]["name"]}, "roleRef")
    sa = pod_template(docs)["spec"]["serviceAccountName"]
    eq(binding["subjects"], [{"kind": "ServiceAccount", "name": sa, "namespace": NAMESPACE}],
       "ClusterRoleBinding subjects")
    check(not by_kind(docs, "Role") and not by_kind(docs, "RoleBinding"), "namespaced RBAC")


def t_namespace_priorityclass(docs):
    ns = one(docs, "Namespace")
    eq(ns["metadata"]["name"], NAMESPACE, "Namespace")
    eq(ns["metadata"].get("labels", {}).get("pod-security.kubernetes.io/enforce"), "restricted",
       "Pod Security level")
    policy = read_policy()["spec"]
    pcs = {d["metadata"]["name"]: d for d in by_kind(docs, "PriorityClass")}
    for pc in policy["priorityClasses"]:
        check(pc["name"] in pcs, "PriorityClass %s of the policy is not rendered" % pc["name"])
        got = pcs[pc["name"]]
        eq((got["value"], got.get("preemptionPolicy", "PreemptLowerPriority")),
           (pc["value"], pc.get("preemptionPolicy", "PreemptLowerPriority")),
           "PriorityClass %s" % pc["name"])
        check(not got.get("globalDefault"), "gpu-standard must not be the global default")
        # the apiserver drops a false globalDefault, and kubectl apply then reports the class
        # "configured" on every apply (seen on a real apiserver)
        check("globalDefault" not in got, "PriorityClass %s: globalDefault: false" % pc["name"])
    eq((pcs["gpu-standard"]["value"], pcs["gpu-standard"]["preemptionPolicy"]),
       (100000, "PreemptLowerPriority"), "gpu-standard")


def t_placeholder(overlay, raw):
    """The static-CA overlays carry the caBundle placeholder that make manifests fills; the
    cert-manager ones do not."""
    placeholder = subprocess.run(
        [sys.executable, os.path.join(ROOT, "scripts", "manifests-fill.py"), "--needs-certs"],
        input=raw.encode(), stdout=subprocess.DEVNULL).returncode == 0
    cm = overlay.startswith("cert-manager")
    check(placeholder != cm, "%s: the static-CA placeholder is%s there" % (
        overlay, "" if placeholder else " not"))


def tls_of(overlay, certs):
    """The certificate source of an overlay rendered and filled as make manifests does it."""
    return ("cert-manager", None) if overlay.startswith("cert-manager") else ("static", certs)


def t_certificates(docs, tls):
    """tls: (SOURCE, ARG), the certificate source and what it promises:
    ("static", DIR)      make manifests filled it: the caBundle is DIR/ca.crt, and the Secret
                         gpuadmit-tls is in the rendering, before the Deployment;
    ("provided", CA)     the caBundle is CA (base64), the Secret is the user's: not rendered;
    ("generated", None)  no caBundle (the chart's hook writes it in the cluster), no Secret;
    ("cert-manager", None)  Issuers and Certificates, cert-manager's caBundle injection."""
    source, arg = tls
    check(source in ("static", "provided", "generated", "cert-manager"), "source %r" % source)
    whs = webhooks(docs)
    secrets = [d for d in by_kind(docs, "Secret") if d["metadata"]["name"] == "gpuadmit-tls"]
    if source != "cert-manager":
        eq(by_kind(docs, "Certificate") + by_kind(docs, "Issuer"), [],
           "cert-manager objects with certificates from %s" % source)
        for kind in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"):
            ann = one(docs, kind)["metadata"].get("annotations") or {}
            check("cert-manager.io/inject-ca-from" not in ann, kind + ": inject-ca-from")
    if source in ("provided", "generated"):
        check(not by_kind(docs, "Secret"), "a Secret in the rendering (%s certificates)" % source)
        for _, w in whs:
            eq(w["clientConfig"].get("caBundle"), arg, w["name"] + " caBundle")
        return
    if source == "static":
        with open(os.path.join(arg, "ca.crt"), "rb") as f:
            ca = base64.b64encode(f.read()).decode()
        for _, w in whs:
            eq(w["clientConfig"].get("caBundle"), ca, w["name"] + " caBundle")
        eq(len(secrets), 1, "TLS Secret gpuadmit-tls in the output")
        s = secrets[0]
        eq((s["type"], s["metadata"].get("namespace")), ("kubernetes.io/tls", NAMESPACE), "Secret")
        eq(sorted(s["data"]), ["ca.crt", "tls.crt", "tls.key"], "Secret keys")
        kinds = [d["kind"] for d in docs]
        check(kinds.index("Secret") < kinds.index("Deployment"),
              "the Secret must come before the Deployment")
        return
    check(not secrets, "cert-manager makes the Secret: it must not be rendered")
    certs_by_name = {d["metadata"]["name"]: d for d in by_kind(docs, "Certificate")}
    issuers = {d["metadata"]["name"]: d for d in by_kind(docs, "Issuer")}
    serving = [c for c in certs_by_name.values() if c["spec"]["secretName"] == "gpuadmit-tls"]
    eq(len(serving), 1, "Certificates writing gpuadmit-tls")
    serving = serving[0]
    eq(sorted(serving["spec"]["dnsNames"]),
       sorted(["%s.%s.svc" % (SERVICE, NAMESPACE), "%s.%s.svc.cluster.local" % (SERVICE, NAMESPACE)]),
       "dnsNames")
    check(not serving["spec"].get("isCA"), "the serving certificate is a CA")
    # the chain: serving <- CA Issuer <- CA Certificate <- selfSigned Issuer
    ca_issuer = issuers.get(serving["spec"]["issuerRef"]["name"])
    check(ca_issuer and "ca" in ca_issuer["spec"], "the serving certificate's issuer is no CA Issuer")
    ca_cert = [c for c in certs_by_name.values()
               if c["spec"]["secretName"] == ca_issuer["spec"]["ca"]["secretName"]]
    check(ca_cert and ca_cert[0]["spec"].get("isCA") is True, "no CA Certificate for the CA Issuer")
    root = issuers.get(ca_cert[0]["spec"]["issuerRef"]["name"])
    check(root and "selfSigned" in root["spec"], "the CA is not issued by a selfSigned Issuer")
    want = "%s/%s" % (NAMESPACE, serving["metadata"]["name"])
    for kind in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"):
        ann = one(docs, kind)["metadata"].get("annotations") or {}
        eq(ann.get("cert-manager.io/inject-ca-from"), want, kind + " inject-ca-from")
    for _, w in whs:
        check("caBundle" not in w["clientConfig"], w["name"] + ": a static caBundle with cert-manager")


def t_rules_kustomization():
    with open(os.path.join(ROOT, "rules", "Kustomization")) as f:
        k = yaml.safe_load(f)
    gens = k["configMapGenerator"]
    eq([g["name"] for g in gens], ["gpuadmit-rules"], "rules generators")
    listed = sorted(gens[0]["files"])
    present = sorted(f for f in os.listdir(os.path.join(ROOT, "rules"))
                     if (f.endswith(".yaml") or f.endswith(".yml")) and not f.startswith(".")
                     and os.path.isfile(os.path.join(ROOT, "rules", f)))
    eq(listed, present, "rules/Kustomization files vs the policy files in rules/")


def t_no_local_paths(texts):
    for name, text in texts:
        for bad in ("/work/", "/home/", "/tmp/", "/root/"):
            check(bad not in text, "%s mentions %s" % (name, bad))


# ---------------------------------------------------------------------------------------------
# 4. CEL matchConditions


def policy_markers():
    """(description, pod spec) for each GPU resource, node label, taint and runtime class of
    rules/default.yaml: each alone must get a pod sent to the webhook."""
    gpu = read_policy()["spec"]["gpu"]
    out = []
    for r in gpu["resources"]:
        name = r.replace("*", "1g.5gb")
        check(fnmatch.fnmatchcase(name, r), "cannot make a name for %s" % r)
        out.append(("limits %s" % name, {"containers": [
            {"name": "a", "resources": {"limits": {name: "1"}}}]}))
        out.append(("init requests %s" % name, {"containers": [{"name": "a"}], "initContainers": [
            {"name": "i", "resources": {"requests": {name: "1"}}}]}))
    for label, value in gpu["nodeLabels"].items():
        out.append(("nodeSelector %s" % label, {"containers": [{"name": "a"}],
                                                "nodeSelector": {label: value}}))
        out.append(("required affinity on %s" % label, {"containers": [{"name": "a"}], "affinity": {
            "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": [
                    {"key": label, "operator": "Exists"}]}]}}}}))
    for taint in gpu["taints"]:
        out.append(("tolerates %s" % taint["key"], {"containers": [{"name": "a"}], "tolerations": [
            {"key": taint["key"], "operator": "Exists", "effect": taint.get("effect", "NoSchedule")}]}))
    for rc in gpu.get("runtimeClasses") or []:
        # a glob: each name the GPU Operator makes that it matches
        for name in ("nvidia", "nvidia-cdi", "nvidia-legacy"):
            if fnmatch.fnmatchcase(name, rc):
                out.append(("runtimeClassName %s (%s)" % (name, rc), {
                    "containers": [{"name": "a"}], "runtimeClassName": name}))
    return out


def C(**kw):
    c = {"name": "c", "image": "busybox"}
    c.update(kw)
    return c


# (description, pod spec, sent to the webhook?)
SPEC_CASES = [
    ("a plain pod", {"containers": [C()]}, False),
    ("an empty spec", {}, False),
    ("cpu and memory only", {"containers": [C(resources={"limits": {"cpu": "1", "memory": "1Gi"},
                                                         "requests": {"cpu": "1"}})]}, False),
    ("empty resources", {"containers": [C(resources={})]}, False),
    ("another extended resource", {"containers": [C(resources={"limits": {"example.com/fpga": 1}})]},
     False),
    ("a non-GPU nodeSelector", {"containers": [C()], "nodeSelector": {"kubernetes.io/os": "linux"}},
     False),
    ("a non-GPU toleration", {"containers": [C()], "tolerations": [
        {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute"}]}, False),
    ("an empty affinity", {"containers": [C()], "affinity": {}}, False),
    ("an empty node affinity", {"containers": [C()], "affinity": {"nodeAffinity": {}}}, False),
    ("required affinity without terms", {"containers": [C()], "affinity": {"nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {}}}}, False),
    ("a term without expressions", {"containers": [C()], "affinity": {"nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{}]}}}}, False),
    ("only a preferred GPU affinity", {"containers": [C()], "affinity": {"nodeAffinity": {
        "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 1, "preference": {
            "matchExpressions": [{"key": "nvidia.com/gpu.present", "operator": "Exists"}]}}]}}},
     False),
    ("runtimeClassName runc", {"containers": [C()], "runtimeClassName": "runc"}, False),
    ("an ordinary env", {"containers": [C(env=[{"name": "FOO", "value": "1"}])]}, False),
    ("privileged, not pinned to a node", {"containers": [C(securityContext={"privileged": True})]},
     False),
    ("a GPU limit", {"containers": [C(resources={"limits": {"nvidia.com/gpu": 1}})]}, True),
    ("a GPU limit in the second container", {"containers": [
        C(), C(name="d", resources={"limits": {"nvidia.com/gpu": "2"}})]}, True),
    ("a shared GPU in an init container", {"containers": [C()], "initContainers": [
        C(resources={"requests": {"nvidia.com/gpu.shared": 1}})]}, True),
    ("a MIG profile", {"containers": [C(resources={"limits": {"nvidia.com/mig-3g.20gb": 1}})]},
     True),
    ("the GPU taint tolerated", {"containers": [C()], "tolerations": [
        {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]}, True),
    # tolerating every taint is "run anywhere" (operators, node agents): sent only together with
    # a way to reach GPUs around the device plugin, as the policy judges it, or with a
    # nodeSelector or required node affinity (which the webhook's view may find picks only GPU
    # nodes: kubernetes.io/hostname: gpu-0)
    ("every taint tolerated", {"containers": [C()], "tolerations": [{"operator": "Exists"}]}, False),
    ("every NoSchedule taint tolerated", {"containers": [C()], "tolerations": [
        {"operator": "Exists", "effect": "NoSchedule"}]}, False),
    ("every taint tolerated, a hostname nodeSelector", {"containers": [C()], "tolerations": [
        {"operator": "Exists"}], "nodeSelector": {"kubernetes.io/hostname": "gpu-0"}}, True),
    ("every NoSchedule taint tolerated, a hostname affinity", {"containers": [C()], "tolerations": [
        {"operator": "Exists", "effect": "NoSchedule"}], "affinity": {"nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                {"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In",
                                       "values": ["gpu-0"]}]}]}}}}, True),
    ("every taint tolerated, only a preferred affinity", {"containers": [C()], "tolerations": [
        {"operator": "Exists"}], "affinity": {"nodeAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 1, "preference": {
                "matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In",
                                      "values": ["gpu-0"]}]}}]}}}, False),
    ("a hostname nodeSelector, no toleration", {"containers": [C()],
                                                "nodeSelector": {"kubernetes.io/hostname": "gpu-0"}},
     False),
    ("every taint tolerated, CUDA_VERSION", {"containers": [C(env=[
        {"name": "CUDA_VERSION", "value": "12.2"}])], "tolerations": [{"operator": "Exists"}]}, True),
    ("every taint tolerated, NVIDIA_REQUIRE_CUDA in an init container", {
        "containers": [C()], "initContainers": [C(env=[{"name": "NVIDIA_REQUIRE_CUDA"}])],
        "tolerations": [{"operator": "Exists"}]}, True),
    ("every taint tolerated, an emptyDir at the device list", {"containers": [C(volumeMounts=[
        {"name": "e", "mountPath": "/var/run/nvidia-container-devices/all"}])], "volumes": [
        {"name": "e", "emptyDir": {}}], "tolerations": [{"operator": "Exists"}]}, True),
    ("CUDA_VERSION, kept off GPU nodes", {"containers": [C(env=[
        {"name": "CUDA_VERSION", "value": "12.2"}])]}, False),
    ("every taint tolerated, privileged", {"containers": [C(securityContext={"privileged": True})],
                                           "tolerations": [{"operator": "Exists"}]}, True),
    ("every taint tolerated, a hostPath", {"containers": [C()], "tolerations": [
        {"key": "", "operator": "Exists"}], "volumes": [{"name": "r", "hostPath": {"path": "/"}}]},
     True),
    ("GPU nodeSelector", {"containers": [C()], "nodeSelector": {"nvidia.com/gpu.present": "true"}},
     True),
    ("GPU required affinity, second term", {"containers": [C()], "affinity": {"nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]},
            {"matchExpressions": [{"key": "nvidia.com/gpu.product", "operator": "In",
                                   "values": ["A100"]}]}]}}}}, True),
    ("runtimeClassName nvidia", {"containers": [C()], "runtimeClassName": "nvidia"}, True),
    ("NVIDIA_VISIBLE_DEVICES", {"containers": [C(env=[{"name": "NVIDIA_VISIBLE_DEVICES",
                                                       "value": "all"}])]}, True),
    ("NVIDIA_VISIBLE_DEVICES in an init container", {"containers": [C()], "initContainers": [
        C(env=[{"name": "NVIDIA_VISIBLE_DEVICES", "valueFrom": {"fieldRef": {
            "fieldPath": "metadata.name"}}}])]}, True),
    # pinned to a node: CEL cannot tell a GPU node from another, the webhook's view can (a pod
    # pinned to a GPU node targets it, and the kubelet checks no NoSchedule taint)
    ("pinned to a node, nothing risky", {"containers": [C()], "nodeName": "n1"}, True),
    ("pinned by matchFields, nothing risky", {"containers": [C()], "affinity": {"nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchFields": [{"key": "metadata.name", "operator": "In",
                              "values": ["gpu-1"]}]}]}}}}, True),
    ("runtimeClassName nvidia-cdi", {"containers": [C()], "runtimeClassName": "nvidia-cdi"}, True),
    ("NVIDIA_VISIBLE_DEVICES empty", {"containers": [C(env=[{"name": "NVIDIA_VISIBLE_DEVICES",
                                                             "value": ""}])]}, True),
    ("pinned and privileged", {"containers": [C(securityContext={"privileged": True})],
                               "nodeName": "gpu-1"}, True),
    ("pinned with envFrom", {"containers": [C(envFrom=[{"configMapRef": {"name": "x"}}])],
                             "nodeName": "gpu-1"}, True),
    ("pinned with a hostPath", {"containers": [C()], "nodeName": "gpu-1", "volumes": [
        {"name": "dev", "hostPath": {"path": "/dev/nvidia0"}}]}, True),
    ("matchFields and privileged init", {"containers": [C()], "initContainers": [
        C(securityContext={"privileged": True})], "affinity": {"nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                {"matchFields": [{"key": "metadata.name", "operator": "In",
                                  "values": ["gpu-1"]}]}]}}}}, True),
]

EPHEMERAL_CASES = [
    ("no ephemeral containers", {"containers": [C()]}, False),
    ("a plain debug container", {"containers": [C()], "ephemeralContainers": [C(name="dbg")]}, False),
    ("a privileged debug container", {"containers": [C()], "ephemeralContainers": [
        C(name="dbg", securityContext={"privileged": True})]}, True),
    ("a debug container with envFrom", {"containers": [C()], "ephemeralContainers": [
        C(name="dbg", envFrom=[{"secretRef": {"name": "s"}}])]}, True),
    ("a debug container with CUDA_VERSION", {"containers": [C()], "ephemeralContainers": [
        C(name="dbg", env=[{"name": "CUDA_VERSION", "value": "12.2"}])]}, True),
    ("a debug container with NVIDIA_VISIBLE_DEVICES", {"containers": [C()], "ephemeralContainers": [
        C(name="dbg", env=[{"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"}])]}, True),
]

WORKLOADS = [("apps", "deployments", "Deployment"), ("apps", "replicasets", "ReplicaSet"),
             ("apps", "statefulsets", "StatefulSet"), ("batch", "jobs", "Job"),
             ("batch", "cronjobs", "CronJob")]


def wrap(kind, spec):
    """An object of kind whose pod spec is spec (None: no spec at all)."""
    meta = {"name": "x", "namespace": "ml"}
    api = {"Pod": "v1", "CronJob": "batch/v1", "Job": "batch/v1"}.get(kind, "apps/v1")
    obj = {"apiVersion": api, "kind": kind, "metadata": meta}
    if spec is None:
        return obj
    tpl = {"metadata": {"labels": {"app": "x"}}, "spec": spec}
    if kind == "Pod":
        obj["spec"] = spec
    elif kind == "CronJob":
        obj["spec"] = {"schedule": "* * * * *", "jobTemplate": {"spec": {"template": tpl}}}
    else:
        obj["spec"] = {"replicas": 1, "template": tpl}
    return obj


def request_env(obj, user="alice", group="", resource="pods", sub="", op="CREATE"):
    return {"object": obj, "oldObject": None, "request": {
        "uid": "u", "operation": op, "namespace": "ml", "name": "x", "subResource": sub,
        "resource": {"group": group, "version": "v1", "resource": resource},
        "userInfo": {"username": user, "groups": ["system:authenticated"]}}}


def entry_for(docs, config_kind, group, resource):
    for kind, w in webhooks(docs):
        if kind != config_kind:
            continue
        for rule in w.get("rules") or []:
            if group in rule["apiGroups"] and resource in rule["resources"]:
                return w, [(c["name"], cel.compile_expr(c["expression"]))
                           for c in w.get("matchConditions") or []]
    raise Fail("no %s entry for %s %s" % (config_kind, group, resource))


def expect(conds, env, want, what):
    got, errors = cel.match(conds, env)
    check(got != "error", "%s: CEL error: %s" % (what, "; ".join(errors)))
    eq(got, "call" if want else "skip", what)


def leaf_removals(obj, path=()):
    """Every copy of obj with one key removed, anywhere in it (for null-safety)."""
    if isinstance(obj, dict):
        for k in obj:
            c = copy.deepcopy(obj)
            del c[k]
            yield path + (k,), c
            for p, sub in leaf_removals(obj[k], path + (k,)):
                c = copy.deepcopy(obj)
                c[k] = sub
                yield p, c
    elif isinstance(obj, list):
        for i, item in enumerate(obj):
            for p, sub in leaf_removals(item, path + (i,)):
                c = list(obj)
                c[i] = sub
                yield p, c


def t_cel_parse(docs):
    for _, w in webhooks(docs):
        names = [c["name"] for c in w.get("matchConditions") or []]
        eq(len(set(names)), len(names), w["name"] + " condition names unique")
        for c in w.get("matchConditions") or []:
            try:
                cel.compile_expr(c["expression"])
            except cel.CelSyntaxError as e:
                raise Fail("%s/%s: %s" % (w["name"], c["name"], e))


def t_cel_workloads(docs):
    """Each spec case, as a Pod and as every workload's template, on both webhooks."""
    cases = SPEC_CASES + [("policy: " + d, s, True) for d, s in policy_markers()]
    for config in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"):
        targets = [("Pod", "", "pods")] + [(k, g, r) for g, r, k in WORKLOADS]
        for kind, group, resource in targets:
            _, conds = entry_for(docs, config, group, resource)
            expect(conds, request_env(wrap(kind, None), group=group, resource=resource), False,
                   "%s %s without a spec" % (config[:8], kind))
            for desc, spec, want in cases:
                env = request_env(wrap(kind, spec), group=group, resource=resource)
                expect(conds, env, want, "%s %s: %s" % (config[:8], kind, desc))


def t_cel_null_safe(docs):
    """A pod spec with every marker at once, then with any one key anywhere removed: never a CEL
    error (which under failurePolicy Fail would refuse the request)."""
    full = {"containers": [C(resources={"limits": {"nvidia.com/gpu": 1}, "requests": {"cpu": "1"}},
                             env=[{"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"}],
                             envFrom=[{"configMapRef": {"name": "x"}}],
                             securityContext={"privileged": True})],
            "initContainers": [C(resources={"requests": {"nvidia.com/gpu": 1}})],
            "nodeSelector": {"nvidia.com/gpu.present": "true"}, "nodeName": "n",
            "runtimeClassName": "nvidia",
            "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists"}],
            "volumes": [{"name": "d", "hostPath": {"path": "/dev"}}],
            "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": [
                    {"key": "nvidia.com/gpu.present", "operator": "Exists"}],
                    "matchFields": [{"key": "metadata.name", "operator": "In",
                                     "values": ["n"]}]}]}}},
            "ephemeralContainers": [C(name="dbg", securityContext={"privileged": True},
                                      env=[{"name": "NVIDIA_VISIBLE_DEVICES"}],
                                      envFrom=[{"secretRef": {"name": "s"}}])]}
    n = 0
    for config in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"):
        targets = [("Pod", "", "pods", ""), ("Pod", "", "pods/ephemeralcontainers", "")]
        targets += [(k, g, r, "") for g, r, k in WORKLOADS]
        for kind, group, resource, _ in targets:
            _, conds = entry_for(docs, config, group, resource)
            obj = wrap(kind, copy.deepcopy(full))
            obj["metadata"]["annotations"] = {"a": "b"}
            obj["metadata"]["ownerReferences"] = [{"kind": "ReplicaSet", "controller": True,
                                                   "name": "r", "apiVersion": "apps/v1",
                                                   "uid": "u"}]
            for path, variant in leaf_removals(obj):
                got, errors = cel.match(conds, request_env(variant, group=group,
                                                           resource=resource))
                check(got != "error", "%s %s without %s: %s"
                      % (config[:8], resource, "/".join(map(str, path)), "; ".join(errors)))
                n += 1
            env = request_env(obj, group=group, resource=resource)
            del env["request"]["userInfo"]["username"]
            check(cel.match(conds, env)[0] != "error", "%s %s: no username" % (config[:8], resource))
    check(n > 500, "only %d variants" % n)


def t_cel_pods_extra(docs):
    gpu_spec = {"containers": [C()], "tolerations": [
        {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]}
    ds_owner = [{"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "dp", "uid": "u",
                 "controller": True}]
    rs_owner = [dict(ds_owner[0], kind="ReplicaSet")]
    for config in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"):
        _, conds = entry_for(docs, config, "", "pods")
        pod = wrap("Pod", copy.deepcopy(gpu_spec))
        pod["metadata"]["ownerReferences"] = ds_owner
        for user, want in (("system:serviceaccount:kube-system:daemon-set-controller", False),
                           ("system:kube-controller-manager", False),
                           ("alice", True),
                           ("system:serviceaccount:ml:daemon-set-controller", True)):
            expect(conds, request_env(pod, user=user), want, "%s DaemonSet pod by %s"
                   % (config[:8], user))
        pod["metadata"]["ownerReferences"] = [dict(ds_owner[0], controller=False)]
        expect(conds, request_env(pod, user="system:kube-controller-manager"), True,
               config[:8] + " non-controller DaemonSet owner")
        pod["metadata"]["ownerReferences"] = rs_owner
        expect(conds, request_env(pod, user="system:kube-controller-manager"), True,
               config[:8] + " ReplicaSet pod")
        mirror = wrap("Pod", copy.deepcopy(gpu_spec))
        mirror["metadata"]["annotations"] = {"kubernetes.io/config.mirror": "abc"}
        expect(conds, request_env(mirror, user="system:node:n1"), False, config[:8] + " mirror pod")


def t_cel_pod_update(docs):
    """Pod UPDATE reaches /validate only when tolerations, nodeSelector, affinity or scheduling
    gates change (and the new object mentions a GPU); /mutate never gets it."""
    _, conds = entry_for(docs, "ValidatingWebhookConfiguration", "", "pods")
    tol = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
    gated = {"containers": [C()], "schedulingGates": [{"name": "g"}]}
    gpu = {"containers": [C(resources={"limits": {"nvidia.com/gpu": 1}})], "tolerations": [tol]}
    cases = [
        ("a gated CPU pod given the GPU toleration and selector", gated,
         dict(gated, tolerations=[tol], nodeSelector={"nvidia.com/gpu.present": "true"}), True),
        ("a GPU pod given one more toleration", gpu,
         dict(gpu, tolerations=[tol, {"key": "x", "operator": "Exists"}]), True),
        ("a GPU pod's gates removed", dict(gpu, schedulingGates=[{"name": "g"}]), gpu, True),
        ("a GPU pod's affinity narrowed", gpu, dict(gpu, affinity={"nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                {"matchExpressions": [{"key": "zone", "operator": "In",
                                       "values": ["a"]}]}]}}}), True),
        ("a GPU pod's labels changed", gpu, gpu, False),
        ("a CPU pod given a toleration of another taint", {"containers": [C()]},
         {"containers": [C()], "tolerations": [{"key": "x", "operator": "Exists"}]}, False),
    ]
    for desc, before, after, want in cases:
        old, new = wrap("Pod", copy.deepcopy(before)), wrap("Pod", copy.deepcopy(after))
        new["metadata"]["labels"] = {"app": "new"}
        env = request_env(new, op="UPDATE")
        env["oldObject"] = old
        expect(conds, env, want, "Validati pod UPDATE: %s" % desc)
        for path, variant in leaf_removals(old):
            env = request_env(new, op="UPDATE")
            env["oldObject"] = variant
            got, errors = cel.match(conds, env)
            check(got != "error", "pod UPDATE, old object without %s: %s"
                  % ("/".join(map(str, path)), "; ".join(errors)))
    _, mconds = entry_for(docs, "MutatingWebhookConfiguration", "", "pods")
    for kind, w in webhooks(docs):
        if kind.startswith("Mutating") and w["name"].startswith("pods."):
            for rule in w["rules"]:
                check("UPDATE" not in rule["operations"], "the mutating pod entry takes UPDATE")


def t_cel_cdi(docs):
    """A cdi.k8s.io/ annotation asks the runtime for devices by name: sent, on a Pod and on every
    workload's template; another annotation is not."""
    for config in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"):
        targets = [("Pod", "", "pods")] + [(k, g, r) for g, r, k in WORKLOADS]
        for kind, group, resource in targets:
            _, conds = entry_for(docs, config, group, resource)
            for key, want in (("cdi.k8s.io/gpu", True), ("example.com/note", False)):
                obj = wrap(kind, {"containers": [C()]})
                meta = obj["metadata"] if kind == "Pod" else (
                    obj["spec"]["jobTemplate"]["spec"]["template"]["metadata"]
                    if kind == "CronJob" else obj["spec"]["template"]["metadata"])
                meta["annotations"] = {key: "nvidia.com/gpu=all"}
                expect(conds, request_env(obj, group=group, resource=resource), want,
                       "%s %s: annotation %s" % (config[:8], kind, key))


def t_cel_ephemeral(docs):
    for config in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"):
        _, conds = entry_for(docs, config, "", "pods/ephemeralcontainers")
        for desc, spec, want in EPHEMERAL_CASES:
            env = request_env(wrap("Pod", spec), resource="pods", sub="ephemeralcontainers",
                              op="UPDATE")
            expect(conds, env, want, "%s ephemeral: %s" % (config[:8], desc))


def configmap_env(ns, name, op="CREATE", generate=False):
    meta = {"namespace": ns}
    if generate:
        meta["generateName"] = name
    else:
        meta["name"] = name
    obj = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta,
           "data": {"any": "version: v1\n"}}
    env = request_env(obj, resource="configmaps", op=op)
    env["request"]["namespace"] = ns
    env["request"]["name"] = "" if generate else name
    return env


def t_cel_configmaps(docs):
    """The ConfigMaps entry sends exactly the ConfigMaps the default policy's device-plugin-config
    rules name (the same pairs), and no other: not the same name elsewhere, not another name
    there, not one being created from a generateName."""
    _, conds = entry_for(docs, "ValidatingWebhookConfiguration", "", "configmaps")
    named = set()
    for rule in read_policy()["spec"]["rules"]:
        if rule.get("type") == "device-plugin-config":
            named |= {(c["namespace"], c["name"]) for c in rule["configMaps"]}
    check(named, "rules/default.yaml names no ConfigMap for device-plugin-config")
    others = {("ml", "time-slicing-config"), ("gpu-operator", "nvidia-device-plugin-config"),
              ("kube-system", "kube-proxy"), ("gpu-operator", "default-mig-parted-config")}
    for ns, name in sorted(named):
        for op in ("CREATE", "UPDATE"):
            expect(conds, configmap_env(ns, name, op), True, "ConfigMap %s/%s %s" % (ns, name, op))
        expect(conds, configmap_env(ns, name, generate=True), False,
               "ConfigMap %s/%s from a generateName" % (ns, name))
    for ns, name in sorted(others - named):
        expect(conds, configmap_env(ns, name), False, "ConfigMap %s/%s" % (ns, name))


def t_cel_upstream(docs):
    """Real objects from tests/data/k8s: NVIDIA's examples are sent; the all-fields fixtures and the
    device plugin's DaemonSet pod (by its controller) evaluate without error."""
    k8s = K8S_DATA
    with open(os.path.join(k8s, "nvidia", "readme-gpu-pod.yaml")) as f:
        pod = yaml.safe_load(f)
    with open(os.path.join(k8s, "nvidia", "testdata-job-1.yaml")) as f:
        job = yaml.safe_load(f)
    with open(os.path.join(k8s, "nvidia", "static-nvidia-device-plugin.yml")) as f:
        ds = [d for d in yaml.safe_load_all(f) if d and d.get("kind") == "DaemonSet"][0]
    for config in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"):
        _, pc = entry_for(docs, config, "", "pods")
        _, wc = entry_for(docs, config, "batch", "jobs")
        expect(pc, request_env(pod), True, config[:8] + " NVIDIA's GPU pod")
        expect(wc, request_env(job, group="batch", resource="jobs"), True, config[:8] + " NVIDIA's Job")
        dspod = {"apiVersion": "v1", "kind": "Pod", "metadata": dict(
            ds["spec"]["template"]["metadata"], namespace="gpu-operator", ownerReferences=[
                {"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "x", "uid": "u",
                 "controller": True}]), "spec": ds["spec"]["template"]["spec"]}
        expect(pc, request_env(dspod, user="system:serviceaccount:kube-system:daemon-set-controller"),
               False, config[:8] + " the device plugin's DaemonSet pod")
        for fixture, group, resource in (("core.v1.Pod.json", "", "pods"),
                                         ("apps.v1.Deployment.json", "apps", "deployments"),
                                         ("apps.v1.StatefulSet.json", "apps", "statefulsets"),
                                         ("batch.v1.Job.json", "batch", "jobs")):
            with open(os.path.join(k8s, "testdata", fixture)) as f:
                obj = json.load(f)
            _, conds = entry_for(docs, config, group, resource)
            got, errors = cel.match(conds, request_env(obj, group=group, resource=resource))
            check(got != "error", "%s %s: %s" % (config[:8], fixture, "; ".join(errors)))


# ---------------------------------------------------------------------------------------------


# ---------------------------------------------------------------------------------------------
# manifests/monitoring: the PrometheusRule and ServiceMonitor (CRDs: no OpenAPI schema here, so
# their shape is checked by hand, and the rules by promtool)

MONITORING = os.path.join(ROOT, "manifests", "monitoring")
PROMTOOL = shutil.which("promtool") or "/usr/bin/promtool"


def monitoring_docs():
    with open(os.path.join(MONITORING, "kustomization.yaml")) as f:
        resources = yaml.safe_load(f)["resources"]
    docs = []
    for r in resources:
        with open(os.path.join(MONITORING, r)) as f:
            docs += [d for d in yaml.safe_load_all(f) if d]
    return docs


def t_prometheusrule():
    rule = one(monitoring_docs(), "PrometheusRule")
    eq(rule["apiVersion"], "monitoring.coreos.com/v1", "PrometheusRule apiVersion")
    eq(rule["metadata"].get("namespace"), NAMESPACE, "PrometheusRule namespace")
    check(set(rule) == {"apiVersion", "kind", "metadata", "spec"}, "PrometheusRule keys")
    eq(set(rule["spec"]), {"groups"}, "PrometheusRule spec keys")
    with open(os.path.join(ROOT, "webhook", "metrics.c")) as f:
        exported = f.read()
    alerts = []
    for g in rule["spec"]["groups"]:
        check(isinstance(g.get("name"), str) and g.get("rules"), "group without name or rules")
        for r in g["rules"]:
            check(set(r) <= {"alert", "expr", "for", "labels", "annotations"},
                  "rule keys %s" % sorted(r))
            check(isinstance(r.get("alert"), str) and isinstance(r.get("expr"), str),
                  "a rule without alert or expr: %r" % r)
            check(r.get("labels", {}).get("severity") in ("info", "warning", "critical"),
                  "%s: severity" % r["alert"])
            check(r.get("annotations", {}).get("summary"), "%s: no summary" % r["alert"])
            for name in set(re.findall(r"\bgpuadmit_[a-z_]+", r["expr"])):
                base = re.sub(r"_(bucket|sum|count)$", "", name)
                check('"%s' % name in exported or '"%s' % base in exported,
                      "%s: metric %s is not exported by webhook/metrics.c" % (r["alert"], name))
            alerts.append(r["alert"])
    eq(len(alerts), len(set(alerts)), "alert names are unique")
    # every alert has a promtool case that fires it and one that does not (a near miss, or the
    # time before its "for:" has passed)
    with open(os.path.join(HERE, "alerts_test.yaml")) as f:
        cases = [c for t in yaml.safe_load(f)["tests"] for c in t.get("alert_rule_test", [])]
    fired = {c["alertname"] for c in cases if c.get("exp_alerts")}
    quiet = {c["alertname"] for c in cases if not c.get("exp_alerts")}
    eq(sorted(set(alerts) - fired), [], "alerts no promtool case fires")
    eq(sorted(set(alerts) - quiet), [], "alerts with no promtool case where they stay quiet")
    eq(sorted((fired | quiet) - set(alerts)), [], "promtool cases of alerts that do not exist")
    check(os.access(PROMTOOL, os.X_OK), "promtool not found (Debian package prometheus)")
    tmp = tempfile.mkdtemp(prefix="gpuadmit-rules-")
    try:
        with open(os.path.join(tmp, "gpuadmit-rules.yaml"), "w") as f:
            yaml.safe_dump(rule["spec"], f)
        shutil.copy(os.path.join(HERE, "alerts_test.yaml"), tmp)
        for args in (["check", "rules", "gpuadmit-rules.yaml"],
                     ["test", "rules", "alerts_test.yaml"]):
            r = subprocess.run([PROMTOOL] + args, cwd=tmp, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, timeout=60)
            check(r.returncode == 0, "promtool %s:\n%s" % (" ".join(args), r.stdout.decode()))
            print("# promtool %s: %s" % (" ".join(args), " ".join(r.stdout.decode().split())))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def t_servicemonitor(golden_docs, docs=None):
    sm = one(docs if docs is not None else monitoring_docs(), "ServiceMonitor")
    eq(sm["apiVersion"], "monitoring.coreos.com/v1", "ServiceMonitor apiVersion")
    eq(sm["metadata"].get("namespace"), NAMESPACE, "ServiceMonitor namespace")
    svc = one(golden_docs, "Service")
    labels = svc["metadata"].get("labels") or {}
    sel = sm["spec"]["selector"]["matchLabels"]
    check(all(labels.get(k) == v for k, v in sel.items()), "ServiceMonitor does not select "
          "the Service gpuadmit (labels %r)" % labels)
    names = [p.get("name") for p in svc["spec"]["ports"]]
    for ep in sm["spec"]["endpoints"]:
        check(ep["port"] in names, "ServiceMonitor port %s not on the Service" % ep["port"])
        eq((ep.get("scheme"), ep.get("path")), ("https", "/metrics"), "scrape scheme and path")
        tls = ep.get("tlsConfig") or {}
        eq(tls.get("serverName"), "%s.%s.svc" % (SERVICE, NAMESPACE), "tlsConfig.serverName")
        eq(tls.get("ca", {}).get("secret"), {"name": "gpuadmit-tls", "key": "ca.crt"},
           "tlsConfig.ca")


# ---------------------------------------------------------------------------------------------
# 5. who may set the opt-out label (components/enforce/exempt-label.yaml)


def exempt_verdict(vap, obj, old=None, user="alice", groups=("system:authenticated",)):
    """What the ValidatingAdmissionPolicy does with a request: "allow" or "deny" (an evaluation
    error fails the test: under failurePolicy Ignore it would let the label through)."""
    env = {"object": obj, "oldObject": old,
           "request": {"userInfo": {"username": user, "groups": list(groups)}
                       if groups is not None else {"username": user}}}
    variables = {}
    env["variables"] = variables
    for v in vap["spec"]["variables"]:
        variables[v["name"]] = cel.evaluate(cel.compile_expr(v["expression"]), env)
    for v in vap["spec"]["validations"]:
        if cel.evaluate(cel.compile_expr(v["expression"]), env) is not True:
            return "deny"
    return "allow"


def labelled(value="true"):
    return {"labels": {OPT_OUT_LABEL: value, "app": "x"}}


def t_exempt_label(mode, docs):
    vaps = by_kind(docs, "ValidatingAdmissionPolicy")
    bindings = by_kind(docs, "ValidatingAdmissionPolicyBinding")
    if mode == "audit":
        eq((len(vaps), len(bindings)), (0, 0), "audit mode refuses nothing: no admission policy")
        return
    eq((len(vaps), len(bindings)), (1, 1), "the opt-out label's admission policy and binding")
    vap, binding = vaps[0], bindings[0]
    eq(binding["spec"].get("policyName"), vap["metadata"]["name"], "binding policyName")
    eq(binding["spec"].get("validationActions"), ["Deny"], "binding validationActions")
    eq(vap["spec"].get("failurePolicy"), "Ignore", "admission policy failurePolicy")
    exprs = vap["spec"]["matchConstraints"]["namespaceSelector"]["matchExpressions"]
    eq(sorted(exprs[0]["values"]), sorted(read_policy()["spec"]["exclude"]["namespaces"]),
       "admission policy excluded namespaces vs rules/default.yaml")
    covered = {(g, r) for rule in vap["spec"]["matchConstraints"]["resourceRules"]
               for g in rule["apiGroups"] for r in rule["resources"]}
    eq(covered, {("", "pods"), ("apps", "deployments"), ("apps", "replicasets"),
                 ("apps", "statefulsets"), ("batch", "jobs"), ("batch", "cronjobs")},
       "resources whose labels the admission policy guards")
    # Left out, scope is stored as "*" by the apiserver, and kubectl apply then sends the whole
    # list again on every apply (seen on a real apiserver: "configured" each time).
    for rule in vap["spec"]["matchConstraints"]["resourceRules"]:
        eq(rule.get("scope"), "Namespaced", "scope of the admission policy's rule %r" % rule)
    pod = {"metadata": {"name": "p"}, "spec": {"containers": [C()]}}
    pod_l = {"metadata": dict(labelled(), name="p"), "spec": {"containers": [C()]}}
    dep = {"metadata": {"name": "d"}, "spec": {"template": {"metadata": {}, "spec": {}}}}
    dep_l = {"metadata": {"name": "d"}, "spec": {"template": {"metadata": labelled()}}}
    cron_l = {"metadata": {"name": "c"}, "spec": {"jobTemplate": {"spec": {
        "template": {"metadata": labelled()}}}}}
    cron_job_l = {"metadata": {"name": "c"}, "spec": {"jobTemplate": {"metadata": labelled(),
                                                                      "spec": {}}}}
    cases = [
        ("a pod without the label", pod, None, {}, "allow"),
        ("a user labels a pod", pod_l, None, {}, "deny"),
        ("a user labels a Deployment's template", dep_l, None, {}, "deny"),
        ("a user adds the label to a template", dep_l, dep, {}, "deny"),
        ("a user labels a CronJob's pod template", cron_l, None, {}, "deny"),
        ("a user labels a CronJob's job template", cron_job_l, None, {}, "deny"),
        ("the label set to false", {"metadata": labelled("false"), "spec": {}}, None, {}, "allow"),
        ("a user updates an object labelled before", dep_l, dep_l, {}, "allow"),
        ("the ReplicaSet controller copies the label into a pod", pod_l, None,
         {"user": "system:serviceaccount:kube-system:replicaset-controller"}, "allow"),
        ("the controller manager's own identity", pod_l, None,
         {"user": "system:kube-controller-manager"}, "allow"),
        ("a member of gpuadmit:exempt", pod_l, None,
         {"groups": ("system:authenticated", "gpuadmit:exempt")}, "allow"),
        ("a service account elsewhere", pod_l, None,
         {"user": "system:serviceaccount:team:builder"}, "deny"),
        ("a request without groups", pod_l, None, {"groups": None}, "deny"),
        ("an object without metadata or spec", {}, None, {}, "allow"),
        ("a template without metadata", {"spec": {"template": {}}}, None, {}, "allow"),
        ("empty labels", {"metadata": {"labels": {}}, "spec": {"jobTemplate": {"spec": {}}}},
         {"metadata": {}}, {}, "allow"),
    ]
    for what, obj, old, who, want in cases:
        try:
            got = exempt_verdict(vap, obj, old, **who)
        except (cel.CelError, cel.CelSyntaxError) as e:
            raise Fail("%s: the admission policy fails to evaluate: %s" % (what, e))
        eq(got, want, what)


# ---------------------------------------------------------------------------------------------
# Any namespace: every overlay as "make manifests NAMESPACE=gpu-system" renders it
# (scripts/manifests-render.sh, then manifests-fill.py), through the same checks with the
# webhook's namespace gpu-system: it must still be excluded everywhere the original was, its
# certificates must name it, and no reference to gpuadmit-system may remain.

RENAMED = "gpu-system"


def render_renamed(overlay, namespace=RENAMED):
    r = subprocess.run([os.path.join(ROOT, "scripts", "manifests-render.sh"),
                        overlay if os.path.isabs(overlay) else os.path.join(OVERLAYS_DIR, overlay),
                        namespace, "gpuadmit", "0.1.0"],
                       env=dict(os.environ, KUBECTL=KUBECTL), stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=120)
    if r.returncode != 0:
        raise Fail("manifests-render.sh %s %s: %s" % (overlay, namespace, r.stderr.decode()[-2000:]))
    return r.stdout.decode()


def t_renamed_nothing_left(filled):
    left = [l.strip() for l in filled.splitlines() if "gpuadmit-system" in l]
    eq(left, [], "references to gpuadmit-system left in the rendering")


def t_cluster_scoped_without_namespace(docs):
    scoped = {"Namespace", "ClusterRole", "ClusterRoleBinding", "PriorityClass",
              "MutatingWebhookConfiguration", "ValidatingWebhookConfiguration",
              "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"}
    eq(sorted("%s/%s" % (d["kind"], d["metadata"]["name"]) for d in docs
              if d["kind"] in scoped and "namespace" in d["metadata"]), [],
       "cluster-scoped objects with a metadata.namespace")


def check_rendering(what, docs, mode, tls, served, policy=None, cel_checks=True,
                    tls_secret="gpuadmit-tls"):
    """Every check of one rendering, from its documents alone: a kustomize overlay as make
    manifests fills it, or the Helm chart's helm template output (tests/chart/test_chart.py).
    what names it in the output; mode is audit or enforce; tls the certificate source
    (t_certificates); served the routes of gpuadmit routes (None: not compared); policy the
    rules ConfigMap's expected data (t_deployment). The webhook's namespace is NAMESPACE
    (in_namespace() switches it)."""
    run("%s: schemas" % what, t_schemas, what, docs)
    if served is not None:
        run("%s: rules equal gpuadmit routes" % what, t_routes, docs, served)
    run("%s: webhook settings (lock-out, %s mode)" % (what, mode), t_webhook_settings, mode, docs)
    run("%s: Deployment" % what, t_deployment, docs, policy, tls_secret)
    run("%s: Service and PDB" % what, t_service_pdb, docs)
    run("%s: RBAC" % what, t_rbac, docs)
    run("%s: Namespace and PriorityClass" % what, t_namespace_priorityclass, docs)
    run("%s: certificates" % what, t_certificates, docs, tls)
    run("%s: who may set the opt-out label" % what, t_exempt_label, mode, docs)
    if cel_checks:
        run("%s: CEL parses (supported subset)" % what, t_cel_parse, docs)
        run("%s: CEL on pods and workloads" % what, t_cel_workloads, docs)
        run("%s: CEL pods: mirror and DaemonSet pods" % what, t_cel_pods_extra, docs)
        run("%s: CEL ephemeral containers" % what, t_cel_ephemeral, docs)
        run("%s: CEL CDI annotations" % what, t_cel_cdi, docs)
        run("%s: CEL pod UPDATE" % what, t_cel_pod_update, docs)
        run("%s: CEL null-safety" % what, t_cel_null_safe, docs)
        run("%s: CEL on upstream objects" % what, t_cel_upstream, docs)
        run("%s: CEL sends only the named ConfigMaps" % what, t_cel_configmaps, docs)


class in_namespace:
    """with in_namespace(NS, policy_text): the checks expect the webhook in namespace NS (its
    own excluded in place of gpuadmit-system) and the policy policy_text (the rendered one,
    whose exclude list has moved with it)."""

    def __init__(self, namespace, policy_text=None):
        self.namespace, self.policy_text = namespace, policy_text

    def __enter__(self):
        global NAMESPACE, MUST_EXCLUDE, POLICY_TEXT
        self.saved = (NAMESPACE, MUST_EXCLUDE, POLICY_TEXT)
        MUST_EXCLUDE = [n for n in MUST_EXCLUDE if n != NAMESPACE] + [self.namespace]
        NAMESPACE, POLICY_TEXT = self.namespace, self.policy_text
        return self

    def __exit__(self, *exc):
        global NAMESPACE, MUST_EXCLUDE, POLICY_TEXT
        NAMESPACE, MUST_EXCLUDE, POLICY_TEXT = self.saved
        return False


def rendered_policy(docs):
    """The policy text of the rendering's one rules ConfigMap."""
    cms = [d for d in by_kind(docs, "ConfigMap") if d["metadata"]["name"].startswith("gpuadmit-rules")]
    check(len(cms) == 1, "one rules ConfigMap")
    return cms[0]["data"]["default.yaml"]


def renamed_checks(what, docs, text):
    """What a rendering in namespace RENAMED must show on top of check_rendering: nothing left
    in gpuadmit-system (text is the rendering), the policy excluding RENAMED, and no namespace
    on a cluster-scoped object."""
    run("%s: nothing left in gpuadmit-system" % what, t_renamed_nothing_left, text)
    run("%s: the policy excludes %s" % (what, RENAMED), lambda: check(
        RENAMED in read_policy()["spec"]["exclude"]["namespaces"], "exclude.namespaces"))
    run("%s: cluster-scoped objects have no namespace" % what,
        t_cluster_scoped_without_namespace, docs)


def check_renamed(what, overlay, raw, certs):
    """The checks of an overlay on a rendering in namespace RENAMED."""
    try:
        filled = fill(raw, certs)
        docs = load_docs(filled)
        policy_text = rendered_policy(docs)
    except Fail as e:
        RESULTS["failed"] += 1
        print("not ok - %s: rendering: %s" % (what, e))
        return
    with in_namespace(RENAMED, policy_text):
        renamed_checks(what, docs, filled)
        run("%s: caBundle placeholder" % what, t_placeholder, overlay, raw)
        check_rendering(what, docs, MODES[overlay], tls_of(overlay, certs), SERVED,
                        cel_checks=False)
    return docs


def t_shared_namespaces_refused(raw_by_ns):
    """A namespace others use is never made the webhook's: its Namespace object, quota and
    Pod Security labels would be applied there, and deleting the install would delete it."""
    for ns, raw in raw_by_ns.items():
        r = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "manifests-fill.py"),
                            "--namespace-of"], input=raw.encode(), stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, timeout=60)
        eq(r.returncode, 2, "manifests-fill.py --namespace-of for namespace %s" % ns)
        check(("namespace %s is not the webhook's own" % ns) in r.stderr.decode(),
              "the refusal says why: %r" % r.stderr.decode())


SERVED = None


def renamed_pass(names, tmp, served):
    global SERVED
    SERVED = served
    try:
        certs = os.path.join(tmp, "certs-" + RENAMED)
        make_certs(certs, RENAMED)
        for overlay in names:
            what = "%s in namespace %s" % (overlay, RENAMED)
            try:
                raw = render_renamed(overlay)
            except Fail as e:
                RESULTS["failed"] += 1
                print("not ok - %s: rendering: %s" % (what, e))
                continue
            docs = check_renamed(what, overlay, raw, certs)
            if overlay == "audit" and docs is not None:
                mon = render_renamed(MONITORING)
                run("monitoring in namespace %s: nothing left in gpuadmit-system" % RENAMED,
                    t_renamed_nothing_left, mon)
                with in_namespace(RENAMED):
                    run("monitoring in namespace %s: ServiceMonitor scrapes the webhook Service"
                        % RENAMED, t_servicemonitor, docs, load_docs(mon))
        # manifests/README's recipe for kustomize alone: an overlay of one's own with a
        # namespace: line and replacements.yaml beside it, filled by make manifests OVERLAY=path
        own = os.path.join(tmp, "own-overlay")
        os.makedirs(own)
        shutil.copy(os.path.join(ROOT, "manifests", "namespace", "replacements.yaml"), own)
        with open(os.path.join(own, "kustomization.yaml"), "w") as f:
            f.write("namespace: %s\nresources: [%s]\nreplacements:\n  - path: replacements.yaml\n"
                    % (RENAMED, os.path.relpath(os.path.join(OVERLAYS_DIR, "enforce"), own)))
        try:
            raw = render_renamed(own, "gpuadmit-system")
        except Fail as e:
            RESULTS["failed"] += 1
            print("not ok - an overlay of its own in namespace %s: rendering: %s" % (RENAMED, e))
        else:
            check_renamed("an overlay of its own in namespace %s" % RENAMED, "enforce", raw, certs)
        refused = {}
        for ns in ("kube-system", "default", "gpu-operator"):
            try:
                refused[ns] = render_renamed("enforce", ns)
            except Fail as e:
                refused[ns] = ""
                print("# %s" % e)
        run("shared namespaces are refused", t_shared_namespaces_refused, refused)
    finally:
        SERVED = None


def main():
    print("# manifests: Kubernetes data %s, routes from %s, %s" % (
        os.path.relpath(K8S_DATA, ROOT) if not os.environ.get("GPUADMIT_K8S_DATA") else K8S_DATA, BIN,
        "kubectl %s" % shutil.which(KUBECTL) if have_kubectl() else
        "no kubectl: the committed renderings are checked, not compared with kustomize"))
    run("validator rejects broken objects", t_validator_rejects)
    run("rules/Kustomization lists the policy files", t_rules_kustomization)
    run("monitoring: PrometheusRule (promtool check and test rules)", t_prometheusrule)
    run("monitoring: ServiceMonitor scrapes the webhook Service",
        lambda: t_servicemonitor(load_docs(golden("audit"))))
    served = None
    try:
        served = server_routes()
        RESULTS["passed"] += 1
        print("ok - gpuadmit routes (%d routes)" % len(served))
    except Exception as e:
        RESULTS["failed"] += 1
        print("not ok - gpuadmit routes: %s" % e)
    names = overlays()
    check_golden_set = sorted(f[:-5] for f in os.listdir(GOLDEN_DIR) if f.endswith(".yaml")) \
        if os.path.isdir(GOLDEN_DIR) else []
    run("a committed rendering per overlay", lambda: eq(check_golden_set, names,
                                                        "tests/manifests/rendered/ vs overlays"))
    tmp = tempfile.mkdtemp(prefix="gpuadmit-manifests-")
    try:
        certs = os.path.join(tmp, "certs")
        make_certs(certs)
        texts = []
        for overlay in names:
            # With kubectl, the checks below judge what kustomize renders now (a stale
            # committed rendering is one failure of its own); without it, the committed one.
            raw = None
            try:
                if have_kubectl():
                    raw = kustomize(overlay)
                    check(raw == golden(overlay), "kubectl kustomize output differs from "
                          "tests/manifests/rendered/%s.yaml: run make manifests-golden" % overlay)
                else:
                    raw = golden(overlay)
            except Fail as e:
                RESULTS["failed"] += 1
                print("not ok - %s: rendering: %s" % (overlay, e))
                if raw is None:
                    continue
            else:
                RESULTS["passed"] += 1
                print("ok - %s: rendering%s" % (overlay, " matches kubectl kustomize"
                                                if have_kubectl() else " (committed)"))
            filled = fill(raw, certs)
            texts.append(("tests/manifests/rendered/%s.yaml" % overlay, raw))
            docs = load_docs(filled)
            if overlay not in MODES:
                RESULTS["failed"] += 1
                print("not ok - %s: not in the test's MODES table" % overlay)
                continue
            run("%s: caBundle placeholder" % overlay, t_placeholder, overlay, raw)
            check_rendering(overlay, docs, MODES[overlay], tls_of(overlay, certs), served)
        run("no developer-machine paths in the renderings", t_no_local_paths, texts)
        if have_kubectl():
            renamed_pass(names, tmp, served)
        else:
            print("# no kubectl: the renamed-namespace renderings are not checked")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("manifests: %d passed, %d failed" % (RESULTS["passed"], RESULTS["failed"]))
    return 1 if RESULTS["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
