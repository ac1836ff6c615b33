#!/usr/bin/python3
"""Fills in the certificates of a rendered overlay (the output of kubectl kustomize) for
"make manifests":

    kubectl kustomize manifests/overlays/audit | scripts/manifests-fill.py CERTS_DIR > OUT
    scripts/manifests-fill.py --needs-certs < RENDERED    exit code 0 when it would read CERTS_DIR

When the overlay carries the static-CA placeholder (components/static-ca), every placeholder
caBundle becomes base64 of CERTS_DIR/ca.crt, and the TLS Secret gpuadmit-tls (tls.crt, tls.key
and ca.crt of CERTS_DIR) is added right after the Namespace, so that one "kubectl apply -f"
installs everything. The output then holds a private key: write it to a file only you can
read. Without the placeholder (the cert-manager overlays) the input is copied unchanged and
CERTS_DIR is not read. Exit code 2 on a usage or input error. Standard library only.
"""
import base64
import os
import sys

# base64 of "CA-BUNDLE-PLACEHOLDER: make manifests replaces this\n"; the same string is in
# manifests/components/static-ca/kustomization.yaml.
PLACEHOLDER = "Q0EtQlVORExFLVBMQUNFSE9MREVSOiBtYWtlIG1hbmlmZXN0cyByZXBsYWNlcyB0aGlzCg=="
NAMESPACE = "gpuadmit-system"
SECRET = "gpuadmit-tls"


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


def secret_doc(certs):
    return "\n".join([
        "apiVersion: v1",
        "kind: Secret",
        "metadata:",
        "  labels:",
        "    app.kubernetes.io/part-of: gpuadmit",
        "  name: %s" % SECRET,
        "  namespace: %s" % NAMESPACE,
        "type: kubernetes.io/tls",
        "data:",
        "  ca.crt: %s" % b64(os.path.join(certs, "ca.crt")),
        "  tls.crt: %s" % b64(os.path.join(certs, "tls.crt")),
        "  tls.key: %s" % b64(os.path.join(certs, "tls.key")),
    ]) + "\n"


def fill(text, certs):
    if PLACEHOLDER not in text:
        return text
    text = text.replace(PLACEHOLDER, b64(os.path.join(certs, "ca.crt")))
    docs, cur = [], []
    for line in text.splitlines(keepends=True):
        if line.rstrip("\n") == "---":
            docs.append("".join(cur))
            cur = []
        else:
            cur.append(line)
    docs.append("".join(cur))
    at = next((i for i, d in enumerate(docs) if "\nkind: Namespace\n" in "\n" + d), None)
    if at is None:
        die("no Namespace in the input")
    docs.insert(at + 1, secret_doc(certs))
    return "---\n".join(docs)


def main():
    if len(sys.argv) != 2:
        die("usage: manifests-fill.py CERTS_DIR|--needs-certs < RENDERED > OUT")
    if sys.argv[1] == "--needs-certs":
        sys.exit(0 if PLACEHOLDER in sys.stdin.read() else 1)
    sys.stdout.write(fill(sys.stdin.read(), sys.argv[1]))


if __name__ == "__main__":
    main()
