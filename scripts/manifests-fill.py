#!/usr/bin/python3
"""Fills in the certificates of a rendered overlay (the output of kubectl kustomize) for
"make manifests":

    kubectl kustomize manifests/overlays/audit | scripts/manifests-fill.py CERTS_DIR > OUT
    scripts/manifests-fill.py --needs-certs < RENDERED    exit code 0 when it would read CERTS_DIR
    scripts/manifests-fill.py --namespace-of < RENDERED   prints the webhook's namespace

When the overlay carries the static-CA placeholder (components/static-ca), every placeholder
caBundle becomes base64 of CERTS_DIR/ca.crt, and the TLS Secret gpuadmit-tls (tls.crt, tls.key
and ca.crt of CERTS_DIR) is added right after the Namespace, so that one "kubectl apply -f"
installs everything. The output then holds a private key: write it to a file only you can
read. Without the placeholder (the cert-manager overlays) the input is copied unchanged and
CERTS_DIR is not read. The webhook's namespace is the one the rendering gives the Service
gpuadmit (or, for manifests/monitoring, the ServiceMonitor): when it is not gpuadmit-system (an
overlay moved by "make manifests NAMESPACE=NS" or by its own namespace: line, manifests/namespace/),
the Secret goes there, the policy's own mentions of gpuadmit-system (its exclude list) inside the
ConfigMap gpuadmit-rules, where no kustomize replacement reaches, become that namespace, and
cluster-scoped objects lose the metadata.namespace kustomize gives the kinds it does not know.
A namespace the webhook must never run in (default, kube-*, or one its policy excludes, such as
gpu-operator) is refused: its Namespace object, quota and Pod Security labels would be applied
to a namespace others use, and deleting the install would delete it. Exit code 2 on a usage or
input error. Standard library only.
"""
import base64
import os
import re
import sys

# base64 of "CA-BUNDLE-PLACEHOLDER: make manifests replaces this\n"; the same string is in
# manifests/components/static-ca/kustomization.yaml.
PLACEHOLDER = "Q0EtQlVORExFLVBMQUNFSE9MREVSOiBtYWtlIG1hbmlmZXN0cyByZXBsYWNlcyB0aGlzCg=="
NAMESPACE = "gpuadmit-system"  # the manifests' own
SECRET = "gpuadmit-tls"
RULES_CONFIGMAP = "gpuadmit-rules"


def die(msg):
    sys.stderr.write("manifests-fill: %s\n" % msg)
    sys.exit(2)


def b64(path):
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        die("%s: %s" % (path, e.strerror))
    if b"-----BEGIN " not in data:
        die("%s: not PEM" % path)
    return base64.b64encode(data).decode("ascii")


def secret_doc(certs, namespace):
    return "\n".join([
        "apiVersion: v1",
        "kind: Secret",
        "metadata:",
        "  labels:",
        "    app.kubernetes.io/part-of: gpuadmit",
        "  name: %s" % SECRET,
        "  namespace: %s" % namespace,
        "type: kubernetes.io/tls",
        "data:",
        "  ca.crt: %s" % b64(os.path.join(certs, "ca.crt")),
        "  tls.crt: %s" % b64(os.path.join(certs, "tls.crt")),
        "  tls.key: %s" % b64(os.path.join(certs, "tls.key")),
    ]) + "\n"


def split_docs(text):
    docs, cur = [], []
    for line in text.splitlines(keepends=True):
        if line.rstrip("\n") == "---":
            docs.append("".join(cur))
            cur = []
        else:
            cur.append(line)
    docs.append("".join(cur))
    return docs


def is_rules_configmap(doc):
    return ("\nkind: ConfigMap\n" in "\n" + doc and
            re.search(r"^  name: %s(-[a-z0-9]+)?$" % RULES_CONFIGMAP, doc, re.M) is not None)


# Kinds without a namespace that kustomize's namespace: may still give one (it knows the scope
# of the built-in kinds it was built with; the admission policies are newer).
CLUSTER_SCOPED = ("Namespace", "ClusterRole", "ClusterRoleBinding", "PriorityClass",
                  "MutatingWebhookConfiguration", "ValidatingWebhookConfiguration",
                  "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding")
# Never the webhook's own: shared by the cluster, whatever the policy says.
RESERVED = ("default", "kube-system", "kube-public", "kube-node-lease")


def kind_of(doc):
    m = re.search(r"^kind: (\S+)$", doc, re.M)
    return m.group(1) if m else None


def name_of(doc):
    m = re.search(r"^metadata:\n(?:  .*\n)*?  name: (\S+)$", doc, re.M)
    return m.group(1) if m else None


def namespace_in_metadata(doc):
    m = re.search(r"^metadata:\n(?:  .*\n)*?  namespace: (\S+)$", doc, re.M)
    return m.group(1) if m else None


def webhook_namespace(docs):
    for kind in ("Service", "ServiceMonitor"):
        for d in docs:
            if kind_of(d) == kind and name_of(d) == "gpuadmit":
                ns = namespace_in_metadata(d)
                if ns is None:
                    die("the %s gpuadmit has no namespace" % kind)
                return ns
    die("no Service (or ServiceMonitor) gpuadmit in the input")


def policy_excludes(doc):
    """The names in the policy's exclude.namespaces flow list ([a, b, ...]) of the ConfigMap."""
    m = re.search(r"^\s*namespaces:\s*\[([^\]]*)\]", doc, re.M)
    return [n.strip().strip("'\"") for n in m.group(1).split(",") if n.strip()] if m else []


def drop_metadata_namespace(doc):
    out, in_meta = [], False
    for line in doc.splitlines(keepends=True):
        if not line.startswith(" "):
            in_meta = line.rstrip("\n") == "metadata:"
        elif in_meta and line.startswith("  namespace: "):
            continue
        out.append(line)
    return "".join(out)


def own_namespace(docs):
    """The webhook's namespace, refused when it is not one gpuadmit can have to itself."""
    namespace = webhook_namespace(docs)
    rules = [d for d in docs if is_rules_configmap(d)]
    if not re.fullmatch(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?", namespace):
        die("namespace %r: not a valid namespace name" % namespace)
    taken = set(RESERVED).union(*[policy_excludes(d) for d in rules]) - {NAMESPACE}
    if namespace in taken:
        die("namespace %s is not the webhook's own: it is one the webhook must never judge (%s); "
            "choose a namespace for gpuadmit alone" % (namespace, ", ".join(sorted(taken))))
    return namespace


def fill(text, certs):
    docs = split_docs(text)
    namespace = own_namespace(docs)
    rules = [i for i, d in enumerate(docs) if is_rules_configmap(d)]
    if namespace != NAMESPACE:
        for i in rules:
            docs[i] = re.sub(r"(?<![\w.-])%s(?![\w.-])" % re.escape(NAMESPACE), namespace, docs[i])
        docs = [drop_metadata_namespace(d) if kind_of(d) in CLUSTER_SCOPED else d for d in docs]
    if PLACEHOLDER in text:
        ca = b64(os.path.join(certs, "ca.crt"))
        docs = [d.replace(PLACEHOLDER, ca) for d in docs]
        at = next((i for i, d in enumerate(docs) if "\nkind: Namespace\n" in "\n" + d), None)
        if at is None:
            die("no Namespace in the input")
        docs.insert(at + 1, secret_doc(certs, namespace))
    return "---\n".join(docs)


def main():
    args = sys.argv[1:]
    if len(args) != 1:
        die("usage: manifests-fill.py CERTS_DIR|--needs-certs|--namespace-of < RENDERED > OUT")
    if args[0] == "--needs-certs":
        sys.exit(0 if PLACEHOLDER in sys.stdin.read() else 1)
    if args[0] == "--namespace-of":
        print(own_namespace(split_docs(sys.stdin.read())))
        return
    sys.stdout.write(fill(sys.stdin.read(), args[0]))


if __name__ == "__main__":
    main()
