#!/usr/bin/env bash
# manifests-render.sh DIR NAMESPACE IMAGE_NAME IMAGE_TAG: prints what kustomize renders for the
# overlay in DIR (any kustomization built on manifests/), with the image set, and, when
# NAMESPACE is not gpuadmit-system, moved to NAMESPACE: kustomize's `namespace:` plus the
# replacements of manifests/namespace/ for the references it does not move (those for the
# kinds the overlay has). DIR may be manifests/monitoring too. make manifests fills in the certificates and the
# policy's exclude list afterwards (scripts/manifests-fill.py); tests/manifests renders the
# same way. Needs kubectl (its built-in kustomize); KUBECTL overrides it.
set -euo pipefail

[[ $# -eq 4 ]] || { echo "usage: manifests-render.sh DIR NAMESPACE IMAGE_NAME IMAGE_TAG" >&2; exit 2; }
dir=$1 namespace=$2 image=$3 tag=$4
kubectl=${KUBECTL:-kubectl}
here=$(cd "$(dirname "$0")/.." && pwd)

# kustomize refuses absolute resource paths and replacement files outside the kustomization's
# folder: a scratch kustomization under build/ names DIR relatively, beside copies of the files
mkdir -p "$here/build/manifests"
k=$(mktemp -d "$here/build/manifests/.kustomize.XXXXXX")
trap 'rm -rf "$k"' EXIT
{
  echo 'apiVersion: kustomize.config.k8s.io/v1beta1'
  echo 'kind: Kustomization'
  echo "resources: [$(realpath --relative-to="$k" "$dir")]"
  echo 'images:'
  echo '  - name: gpuadmit'
  echo "    newName: $image"
  echo "    newTag: \"$tag\""
} > "$k/kustomization.yaml"
if [[ "$namespace" != gpuadmit-system ]]; then
  # each file for the kinds it edits: a replacement whose source or target field is missing
  # is an error
  kinds=$("$kubectl" kustomize "$dir" | sed -n 's/^kind: //p')
  printf '%s\n' "namespace: $namespace" 'replacements:' >> "$k/kustomization.yaml"
  for pair in Service:replacements.yaml Certificate:replacements-cert-manager.yaml \
              ServiceMonitor:replacements-monitoring.yaml; do
    if grep -qx "${pair%%:*}" <<< "$kinds"; then
      cp "$here/manifests/namespace/${pair#*:}" "$k/"
      echo "  - path: ${pair#*:}" >> "$k/kustomization.yaml"
    fi
  done
fi
"$kubectl" kustomize "$k"
