#!/usr/bin/python3
"""make chart-check: the Helm chart charts/gpuadmit, rendered with helm template.

    GPUADMIT_BIN=build/release/gpuadmit /usr/bin/python3 tests/chart/test_chart.py

- helm lint, with the default values and with an enforce values file (tests/chart/enforce.yaml);
- with the values that match each overlay (the defaults for audit, mode=enforce for enforce, ...)
  the chart renders the same objects as the overlay's committed rendering
  (tests/manifests/rendered/, which make manifests-check keeps equal to kubectl kustomize),
  compared as parsed objects keyed by kind, namespace and name. Ignored: Helm's own labels
  (helm.sh/chart, app.kubernetes.io/managed-by, app.kubernetes.io/instance) and Helm's own
  annotations (helm.sh/..., here helm.sh/resource-policy); nothing else. The first difference
  is printed;
- every rendering (those, and provided, generated and cert-manager certificates, a renamed
  namespace, the policy inline or from a ConfigMap of one's own, monitoring) goes through
  check_rendering() of tests/manifests/test_manifests.py: schemas, routes, lock-out, RBAC,
  certificates, CEL. The certificate hook's objects are checked on their own;
- what the chart refuses: shared namespaces, and values its schema rejects.

Environment: GPUADMIT_BIN (default build/release/gpuadmit), HELM (default: what
scripts/helm-binary.sh builds). Prints "ok - NAME" or "not ok - NAME: REASON" per check and ends
with "chart: N passed, M failed"; exit code 1 when any check failed.
"""
import base64
import copy
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tests", "manifests"))
import test_manifests as tm  # noqa: E402
from common import Fail, check, eq  # noqa: E402  (tests/e2e, on the path test_manifests sets)

import yaml  # noqa: E402

CHART = os.path.join(ROOT, "charts", "gpuadmit")
RELEASE = "gpuadmit"
NAMESPACE = "gpuadmit-system"
PLACEHOLDER = "Q0EtQlVORExFLVBMQUNFSE9MREVSOiBtYWtlIG1hbmlmZXN0cyByZXBsYWNlcyB0aGlzCg=="
HELM_LABELS = ("helm.sh/chart", "app.kubernetes.io/managed-by", "app.kubernetes.io/instance")
HOOKS = "pre-install,pre-upgrade,post-install,post-upgrade"
# The values that render each overlay: (overlay, --set values, mode, certificate source)
OVERLAY_VALUES = [
    ("audit", [], "audit", ("provided", PLACEHOLDER)),
    ("enforce", ["mode=enforce"], "enforce", ("provided", PLACEHOLDER)),
    ("cert-manager", ["certificates.certManager=true"], "audit", ("cert-manager", None)),
    ("cert-manager-enforce", ["mode=enforce", "certificates.certManager=true"], "enforce",
     ("cert-manager", None)),
    ("enforce-client-auth", ["mode=enforce", "clientAuth.enabled=true"], "enforce",
     ("provided", PLACEHOLDER)),
]

HELM = None
HELM_ENV = None
run = tm.run


def helm(*args, ok=True):
    r = subprocess.run([HELM] + list(args), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       env=HELM_ENV, timeout=120)
    if ok and r.returncode != 0:
        raise Fail("helm %s: exit %d: %s" % (" ".join(args), r.returncode,
                                             r.stderr.decode()[-2000:]))
    return r


def template(namespace=NAMESPACE, sets=(), values=()):
    args = ["template", RELEASE, CHART, "--namespace", namespace]
    for s in sets:
        args += ["--set", s]
    for v in values:
        args += ["--values", v]
    return helm(*args).stdout.decode()


def is_hook(doc):
    return "helm.sh/hook" in ((doc.get("metadata") or {}).get("annotations") or {})


def split_hooks(docs):
    return [d for d in docs if not is_hook(d)], [d for d in docs if is_hook(d)]


def without_helm(doc):
    """doc without Helm's own labels and annotations (and without the maps they leave empty)."""
    d = copy.deepcopy(doc)
    meta = d.get("metadata") or {}
    for field, drop in (("labels", lambda k: k in HELM_LABELS),
                        ("annotations", lambda k: k.startswith("helm.sh/"))):
        m = meta.get(field)
        if m is None:
            continue
        for k in [k for k in m if drop(k)]:
            del m[k]
        if not m:
            del meta[field]
    return d


def keyed(docs):
    out = {}
    for d in docs:
        m = d.get("metadata") or {}
        key = (d.get("kind"), m.get("namespace", ""), m.get("name"))
        check(key not in out, "%s %s/%s rendered twice" % key)
        out[key] = d
    return out


def first_difference(want, got, path=""):
    """The first path where got differs from want, with both values; None when equal."""
    if type(want) is not type(got):
        return "%s: %r in the overlay, %r in the chart" % (path or "/", want, got)
    if isinstance(want, dict):
        for k in sorted(set(want) | set(got), key=str):
            if k not in got:
                return "%s/%s: only in the overlay (%r)" % (path, k, want[k])
            if k not in want:
                return "%s/%s: only in the chart (%r)" % (path, k, got[k])
            d = first_difference(want[k], got[k], "%s/%s" % (path, k))
            if d:
                return d
        return None
    if isinstance(want, list):
        for i, (a, b) in enumerate(zip(want, got)):
            d = first_difference(a, b, "%s/%d" % (path, i))
            if d:
                return d
        if len(want) != len(got):
            return "%s: %d items in the overlay, %d in the chart" % (path, len(want), len(got))
        return None
    if want != got:
        return "%s: %r in the overlay, %r in the chart" % (path or "/", want, got)
    return None


def t_same_objects(chart_docs, want_docs):
    """The chart's objects, Helm's own labels and annotations aside, are the overlay's."""
    got = keyed([without_helm(d) for d in chart_docs])
    want = keyed(want_docs)
    only = sorted(set(want) - set(got)), sorted(set(got) - set(want))
    check(not only[0] and not only[1], "objects only in the overlay %s, only in the chart %s"
          % only)
    for key in sorted(want, key=str):
        d = first_difference(want[key], got[key])
        check(d is None, "%s %s/%s: %s" % (key + (d,)))


def kustomize_hash(data):
    """kustomize's configMapGenerator suffix for a ConfigMap of this data (its hasher hashes
    an empty name: charts/gpuadmit/templates/_helpers.tpl, gpuadmit.rulesConfigMap)."""
    text = json.dumps({"data": data, "kind": "ConfigMap", "name": ""}, sort_keys=True,
                      separators=(",", ":"), ensure_ascii=False)
    for c, e in (("&", "\\u0026"), ("<", "\\u003c"), (">", "\\u003e")):
        text = text.replace(c, e)  # Go's encoding/json, as kustomize and Helm use it
    return hashlib.sha256(text.encode()).hexdigest()[:10].translate(str.maketrans("013ae",
                                                                                  "ghkmt"))


# ---------------------------------------------------------------------------------------------
# checks of the chart alone


def t_lint(*args):
    r = helm("lint", "--strict", CHART, "--namespace", NAMESPACE, *args, ok=False)
    out = (r.stdout + r.stderr).decode()
    shown = " ".join(os.path.relpath(a, ROOT) if os.path.isabs(a) else a for a in args)
    print("# helm lint %s: %s" % (shown or "(default values)", out.strip().splitlines()[-1]))
    check(r.returncode == 0 and "0 chart(s) failed" in out, "helm lint:\n" + out)
    check("[WARNING]" not in out and "[ERROR]" not in out, "helm lint:\n" + out)


def t_copies():
    """The chart ships copies (a chart reads files only inside itself): the policy files of
    rules/ (those rules/Kustomization lists) and the PrometheusRule of manifests/monitoring."""
    with open(os.path.join(ROOT, "rules", "Kustomization")) as f:
        listed = yaml.safe_load(f)["configMapGenerator"][0]["files"]
    copied = sorted(os.listdir(os.path.join(CHART, "files", "rules")))
    eq(copied, sorted(listed), "charts/gpuadmit/files/rules/ vs rules/Kustomization")
    pairs = [(os.path.join("rules", f), os.path.join("files", "rules", f)) for f in listed]
    pairs.append((os.path.join("manifests", "monitoring", "prometheusrule.yaml"),
                  os.path.join("files", "prometheusrule.yaml")))
    for src, dst in pairs:
        with open(os.path.join(ROOT, src)) as a, open(os.path.join(CHART, dst)) as b:
            check(a.read() == b.read(), "charts/gpuadmit/%s differs from %s: cp %s %s"
                  % (dst, src, src, os.path.join("charts", "gpuadmit", dst)))


def t_refused_namespaces():
    """A namespace the cluster shares, or one the webhooks never judge, is not the webhook's."""
    for args in (["--namespace", "default"], ["--namespace", "kube-system"],
                 ["--namespace", NAMESPACE, "--set", "namespace=gpu-operator"],
                 ["--namespace", "x", "--set", "namespace=kube-node-lease"]):
        r = helm("template", RELEASE, CHART, *args, ok=False)
        err = r.stderr.decode()
        check(r.returncode != 0 and "is not the webhook's own" in err,
              "helm template %s: exit %d: %s" % (" ".join(args), r.returncode, err[-300:]))


def t_schema_refuses():
    """values.schema.json turns away what would render a broken install."""
    for sets, want in ((["mode=enforcing"], "/mode"),
                       (["certificates.certManager=true", "certificates.generated.enabled=true"],
                        "/certificates/generated/enabled"),
                       (["namespace=GPU_System"], "/namespace"),
                       (["certificates.provided.caBundle=not base64!"], "/certificates/provided"),
                       (["image.tag=latest"], "/image/tag"),
                       (["failurePolicy=Fail"], "additional properties 'failurePolicy'")):
        args = ["template", RELEASE, CHART, "--namespace", NAMESPACE]
        for s in sets:
            args += ["--set", s]
        r = helm(*args, ok=False)
        err = r.stderr.decode()
        check(r.returncode != 0 and want in err, "%s: exit %d: %s" % (sets, r.returncode,
                                                                      err[-300:]))


def t_no_namespace_object(docs, default_docs):
    """createNamespace=false (helm install --create-namespace): everything else as by default."""
    eq(tm.by_kind(docs, "Namespace"), [], "Namespace objects")
    t_same_objects(docs, [d for d in default_docs if d["kind"] != "Namespace"])


def t_webhook_url(docs, base):
    for _, w in tm.webhooks(docs):
        path = "/mutate" if ".mutate." in w["name"] else "/validate"
        eq(w["clientConfig"].get("url"), base + path, w["name"] + " url")
        check("service" not in w["clientConfig"], w["name"] + ": a service with the url")


def t_policy_configmap(docs, files):
    """An inline policy: the ConfigMap holds it, named by the hash of its content as kustomize
    names it (a change is a rollout)."""
    cms = [d for d in tm.by_kind(docs, "ConfigMap") if d["metadata"]["name"].startswith(
        "gpuadmit-rules-")]
    eq(len(cms), 1, "rules ConfigMaps")
    eq(cms[0]["data"], files, "rules ConfigMap data")
    eq(cms[0]["metadata"]["name"], "gpuadmit-rules-" + kustomize_hash(files), "its name")


def t_monitoring(docs, release_docs, labels):
    """ServiceMonitor and PrometheusRule: manifests/monitoring's objects (with its kustomization's
    labels), plus the labels asked for (labels: kind -> labels); the ServiceMonitor scrapes the
    webhook's Service."""
    with open(os.path.join(tm.MONITORING, "kustomization.yaml")) as f:
        pairs = yaml.safe_load(f)["labels"][0]["pairs"]
    want = tm.monitoring_docs()
    for d in want:
        d["metadata"].setdefault("labels", {}).update(pairs)
        d["metadata"]["labels"].update(labels[d["kind"]])
    t_same_objects([d for d in docs if d["kind"] in ("ServiceMonitor", "PrometheusRule")], want)
    tm.t_servicemonitor(release_docs, docs)


def t_hooks(hooks):
    """The generated certificates' hook: a Job and the RBAC it needs, nothing more; deleted
    once it succeeded (and before it is made anew), its pod within Pod Security restricted."""
    ns = tm.NAMESPACE
    eq(sorted((d["kind"], d["metadata"]["name"]) for d in hooks),
       sorted([("ServiceAccount", "gpuadmit-certs"), ("Role", "gpuadmit-certs"),
               ("RoleBinding", "gpuadmit-certs"), ("ClusterRole", "gpuadmit-certs"),
               ("ClusterRoleBinding", "gpuadmit-certs"), ("Job", "gpuadmit-certs")]),
       "hook objects")
    for d in hooks:
        ann = d["metadata"]["annotations"]
        what = "%s %s" % (d["kind"], d["metadata"]["name"])
        eq(ann["helm.sh/hook"], HOOKS, what + " helm.sh/hook")
        eq(ann.get("helm.sh/hook-delete-policy"), "before-hook-creation,hook-succeeded",
           what + " helm.sh/hook-delete-policy")
        # weights order the objects of one hook: the RBAC before the Job that uses it
        eq(ann.get("helm.sh/hook-weight", "0"), "0" if d["kind"] == "Job" else "-10",
           what + " helm.sh/hook-weight")
    by = {d["kind"]: d for d in hooks}
    eq(by["Role"]["rules"], [
        {"apiGroups": [""], "resources": ["secrets"], "verbs": ["create"]},
        {"apiGroups": [""], "resources": ["secrets"], "resourceNames": ["gpuadmit-tls"],
         "verbs": ["get", "update"]}], "Role rules")
    eq(by["ClusterRole"]["rules"], [
        {"apiGroups": ["admissionregistration.k8s.io"],
         "resources": ["mutatingwebhookconfigurations", "validatingwebhookconfigurations"],
         "resourceNames": ["gpuadmit"], "verbs": ["get", "patch"]}], "ClusterRole rules")
    sa = {"kind": "ServiceAccount", "name": "gpuadmit-certs", "namespace": ns}
    for kind, role in (("RoleBinding", "Role"), ("ClusterRoleBinding", "ClusterRole")):
        eq((by[kind]["roleRef"], by[kind]["subjects"]),
           ({"apiGroup": "rbac.authorization.k8s.io", "kind": role, "name": "gpuadmit-certs"},
            [sa]), kind)
    for kind in ("ServiceAccount", "Role", "RoleBinding", "Job"):
        eq(by[kind]["metadata"].get("namespace"), ns, kind + " namespace")
    pod = by["Job"]["spec"]["template"]["spec"]
    eq(pod.get("serviceAccountName"), "gpuadmit-certs", "the Job's ServiceAccount")
    psc = pod.get("securityContext") or {}
    eq((psc.get("runAsNonRoot"), (psc.get("seccompProfile") or {}).get("type")),
       (True, "RuntimeDefault"), "the Job's pod securityContext")
    containers = pod.get("initContainers", []) + pod["containers"]
    for c in containers:
        sc = c.get("securityContext") or {}
        eq((sc.get("allowPrivilegeEscalation"), sc.get("readOnlyRootFilesystem"),
            (sc.get("capabilities") or {}).get("drop")), (False, True, ["ALL"]),
           c["name"] + " securityContext")
    certs, apply = pod["initContainers"][0], pod["containers"][0]
    eq(certs["args"][:7], ["certs", "--service", "gpuadmit", "--namespace", ns, "--out",
                           "/certs/new"], "gpuadmit certs arguments")
    with open(os.path.join(CHART, "files", "certs-job.sh")) as f:
        eq(apply["args"], [f.read()], "the kubectl container runs files/certs-job.sh")
    env = {e["name"]: e.get("value") for e in apply["env"]}
    eq((env["NAMESPACE"], env["SECRET"], env["WEBHOOKS"], env["NEW"]),
       (ns, "gpuadmit-tls", "gpuadmit", "/certs/new"), "the script's environment")
    r = subprocess.run(["bash", "-n", os.path.join(CHART, "files", "certs-job.sh")],
                       stderr=subprocess.PIPE)
    check(r.returncode == 0, "bash -n files/certs-job.sh: %s" % r.stderr.decode())


# ---------------------------------------------------------------------------------------------


def rendering(what, text_fn):
    """text_fn() -> (text, docs), or a failure counted under what."""
    try:
        text = text_fn()
        return text, tm.load_docs(text)
    except Fail as e:
        tm.RESULTS["failed"] += 1
        print("not ok - %s: rendering: %s" % (what, e))
        return None, None


def check_overlays(served):
    default_docs = None
    for overlay, sets, mode, tls in OVERLAY_VALUES:
        what = "chart (%s)" % (" ".join(sets) or "default values")
        _, docs = rendering(what, lambda: template(sets=sets))
        if docs is None:
            continue
        if overlay == "audit":
            default_docs = docs
        run("%s renders the objects of overlays/%s" % (what, overlay), t_same_objects, docs,
            tm.load_docs(tm.golden(overlay)))
        tm.check_rendering(what, docs, mode, tls, served)
    return default_docs


def check_variants(served, tmp, default_docs):
    certs = os.path.join(tmp, "certs")
    tm.make_certs(certs)
    with open(os.path.join(certs, "ca.crt"), "rb") as f:
        ca = base64.b64encode(f.read()).decode()
    what = "chart (provided certificates)"
    sets = ["certificates.provided.caBundle=" + ca, "certificates.provided.secretName=serving"]
    _, docs = rendering(what, lambda: template(sets=sets))
    if docs:
        tm.check_rendering(what, docs, "audit", ("provided", ca), served, tls_secret="serving",
                           cel_checks=False)

    what = "chart (generated certificates, enforce)"
    _, docs = rendering(what, lambda: template(sets=["certificates.generated.enabled=true",
                                                     "mode=enforce"]))
    if docs:
        release, hooks = split_hooks(docs)
        tm.check_rendering(what, release, "enforce", ("generated", None), served,
                           cel_checks=False)
        run("%s: schemas of the hook's objects" % what, tm.t_schemas, what, hooks)
        run("%s: the hook" % what, t_hooks, hooks)

    # A renamed namespace, by the release's namespace and by the value namespace (the release
    # elsewhere), with the certificate sources whose names move with it.
    for sets, release_ns in (([], tm.RENAMED),
                             (["namespace=" + tm.RENAMED, "mode=enforce",
                               "certificates.certManager=true"], "tooling"),
                             (["namespace=" + tm.RENAMED, "certificates.generated.enabled=true",
                               "monitoring.serviceMonitor.enabled=true"], "tooling")):
        what = "chart in namespace %s (%s)" % (tm.RENAMED, " ".join(
            ["--namespace " + release_ns] + sets))
        text, docs = rendering(what, lambda: template(release_ns, sets))
        if docs is None:
            continue
        release, hooks = split_hooks(docs)
        mode = "enforce" if "mode=enforce" in sets else "audit"
        tls = (("cert-manager", None) if "certificates.certManager=true" in sets else
               ("generated", None) if "certificates.generated.enabled=true" in sets else
               ("provided", PLACEHOLDER))
        try:
            policy_text = tm.rendered_policy(release)
        except Fail as e:
            tm.RESULTS["failed"] += 1
            print("not ok - %s: %s" % (what, e))
            continue
        with tm.in_namespace(tm.RENAMED, policy_text):
            tm.renamed_checks(what, docs, text)
            tm.check_rendering(what, [d for d in release if d["kind"] != "ServiceMonitor"],
                               mode, tls, served, cel_checks=False)
            if hooks:
                run("%s: the hook" % what, t_hooks, hooks)
            if tm.by_kind(release, "ServiceMonitor"):
                run("%s: ServiceMonitor" % what, tm.t_servicemonitor, release, release)

    what = "chart (createNamespace=false)"
    _, docs = rendering(what, lambda: template(sets=["createNamespace=false"]))
    if docs and default_docs:
        run("%s: the default objects but the Namespace" % what, t_no_namespace_object, docs,
            [without_helm(d) for d in default_docs])

    what = "chart (webhookURL)"
    _, docs = rendering(what, lambda: template(sets=["webhookURL=https://10.0.0.5:8443/"]))
    if docs:
        run("%s: every webhook calls the URL" % what, t_webhook_url, docs,
            "https://10.0.0.5:8443")

    with open(os.path.join(ROOT, "rules", "default.yaml")) as f:
        text = f.read().replace("available: Warn", "available: Deny")
    files = {"default.yaml": text}
    values = os.path.join(tmp, "policy.yaml")
    with open(values, "w") as f:
        yaml.safe_dump({"policy": {"files": files}}, f)
    what = "chart (policy inline)"
    _, docs = rendering(what, lambda: template(values=[values]))
    if docs:
        tm.check_rendering(what, docs, "audit", ("provided", PLACEHOLDER), served, policy=files,
                           cel_checks=False)
        run("%s: the ConfigMap" % what, t_policy_configmap, docs, files)

    what = "chart (policy.existingConfigMap)"
    _, docs = rendering(what, lambda: template(sets=["policy.existingConfigMap=team-rules"]))
    if docs:
        tm.check_rendering(what, docs, "audit", ("provided", PLACEHOLDER), served,
                           policy="team-rules", cel_checks=False)

    what = "chart (monitoring)"
    _, docs = rendering(what, lambda: template(sets=[
        "monitoring.serviceMonitor.enabled=true", "monitoring.prometheusRule.enabled=true",
        "monitoring.serviceMonitor.labels.release=kube-prometheus-stack",
        "monitoring.prometheusRule.labels.role=alert-rules"]))
    if docs:
        run("%s: manifests/monitoring's objects" % what, t_monitoring, docs, docs,
            {"ServiceMonitor": {"release": "kube-prometheus-stack"},
             "PrometheusRule": {"role": "alert-rules"}})


def main():
    global HELM, HELM_ENV
    tmp = tempfile.mkdtemp(prefix="gpuadmit-chart-")
    try:
        # helm's cache, configuration and data under tmp: nothing written to $HOME
        HELM_ENV = dict(os.environ, HELM_CACHE_HOME=os.path.join(tmp, "helm", "cache"),
                        HELM_CONFIG_HOME=os.path.join(tmp, "helm", "config"),
                        HELM_DATA_HOME=os.path.join(tmp, "helm", "data"))
        HELM = os.environ.get("HELM")
        if not HELM:
            r = subprocess.run([os.path.join(ROOT, "scripts", "helm-binary.sh")],
                               stdout=subprocess.PIPE, timeout=3600)
            if r.returncode != 0:
                print("not ok - helm (scripts/helm-binary.sh exit %d)\nchart: 0 passed, 1 failed"
                      % r.returncode)
                return 1
            HELM = r.stdout.decode().strip()
        print("# chart: %s, %s, routes from %s" % (
            os.path.relpath(CHART, ROOT), helm("version", "--short").stdout.decode().strip(),
            tm.BIN))
        run("helm lint", t_lint)
        run("helm lint (tests/chart/enforce.yaml)", t_lint, "--values",
            os.path.join(HERE, "enforce.yaml"))
        run("the chart's copies of rules/ and the PrometheusRule", t_copies)
        run("shared namespaces are refused", t_refused_namespaces)
        run("values.schema.json refuses bad values", t_schema_refuses)
        served = None
        try:
            served = tm.server_routes()
        except Exception as e:  # noqa: BLE001 - counted, and the rest still runs
            tm.RESULTS["failed"] += 1
            print("not ok - gpuadmit routes: %s" % e)
        default_docs = check_overlays(served)
        check_variants(served, tmp, default_docs)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("chart: %d passed, %d failed" % (tm.RESULTS["passed"], tm.RESULTS["failed"]))
    return 1 if tm.RESULTS["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
