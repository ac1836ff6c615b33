#!/usr/bin/python3
"""Fills in the certificates of a rendered overlay (the output of kubectl kustomize) for
"make manifests":

    kubectl kustomize manifests/overlays/audit | scripts/manifests-fill.py [--namespace NS] CERTS_DIR > OUT
    scripts/manifests-fill.py --needs-certs < RENDERED    exit code 0 when it would read CERTS_DIR

When the overlay carries the static-CA placeholder (components/static-ca), every placeholder
caBundle becomes base64 of CERTS_DIR/ca.crt, and the TLS Secret gpuadmit-tls (tls.crt, tls.key
and ca.crt of CERTS_DIR) is added right after the Namespace, so that one "kubectl apply -f"
installs everything. The output then holds a private key: write it to a file only you can
read. Without the placeholder (the cert-manager overlays) the input is copied unchanged and
CERTS_DIR is not read. With --namespace NS (an overlay moved to NS by "make manifests
NAMESPACE=NS", manifests/namespace/), the Secret goes to NS, and the policy's own mentions of
gpuadmit-system (its exclude list) inside the ConfigMap gpuadmit-rules, where no kustomize
replacement reaches, become NS. Exit code 2 on a usage or input error. Standard library only.
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


def fill(text, certs, namespace):
    docs = split_docs(text)
    if namespace != NAMESPACE:
        rules = [i for i, d in enumerate(docs) if is_rules_configmap(d)]
        if not rules:
            die("no ConfigMap %s in the input" % RULES_CONFIGMAP)
        for i in rules:
            docs[i] = re.sub(r"(?<![\w.-])%s(?![\w.-])" % re.escape(NAMESPACE), namespace, docs[i])
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
    namespace = NAMESPACE
    if len(args) == 3 and args[0] == "--namespace":
        namespace, args = args[1], args[2:]
    if len(args) != 1:
        die("usage: manifests-fill.py [--namespace NS] CERTS_DIR|--needs-certs < RENDERED > OUT")
    if args[0] == "--needs-certs":
        sys.exit(0 if PLACEHOLDER in sys.stdin.read() else 1)
    if not re.fullmatch(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?", namespace):
        die("--namespace %r: not a valid namespace name" % namespace)
    sys.stdout.write(fill(sys.stdin.read(), args[0], namespace))


if __name__ == "__main__":
    main()
