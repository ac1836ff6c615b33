#!/usr/bin/env bash
# Installs the Debian packages gpuadmit needs to build and test, if any is missing.
# Idempotent: when everything is present it only asks dpkg, and says nothing.
# With arguments it installs those packages instead (make image passes its own tools).
set -euo pipefail

packages=(
  gcc make pkg-config git clang libclang-rt-14-dev
  libmicrohttpd-dev libgnutls28-dev libjansson-dev libyaml-dev libssl-dev libcurl4-openssl-dev
  openssl curl python3 python3-jsonschema python3-cryptography python3-yaml
  # promtool: the e2e test checks /metrics with it, make manifests-check the alerting rules
  prometheus
)
[[ $# -eq 0 ]] || packages=("$@")

missing=()
for p in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
  [[ "$status" == "install ok installed" ]] || missing+=("$p")
done
[[ ${#missing[@]} -eq 0 ]] && exit 0

echo "installing missing packages: ${missing[*]}" >&2
sudo=()
if [[ $(id -u) -ne 0 ]]; then
  command -v sudo >/dev/null || { echo "need root (or sudo) to install: ${missing[*]}" >&2; exit 1; }
  sudo=(sudo)
fi
export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get update -qq
"${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
