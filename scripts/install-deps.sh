#!/usr/bin/env bash
# Installs the Debian packages gpuadmit needs to build and test, if any is missing.
# Idempotent: when everything is present it only asks dpkg, and says nothing.
# With arguments it installs those packages instead (make image passes its own tools).
set -euo pipefail

packages=(
  gcc make pkg-config git clang libclang-rt-14-dev
  libmicrohttpd-dev libgnutls28-dev libyaml-dev libssl-dev libcurl4-openssl-dev
  openssl curl python3 python3-jsonschema python3-cryptography python3-yaml
  # promtool: the e2e test checks /metrics with it, make manifests-check the alerting rules
  prometheus
)
# yyjson (JSON): Debian 13's libyyjson-dev 0.10.0. Nothing is done when it is there (pkg-config
# finds yyjson, or dpkg has libyyjson-dev). Otherwise a release whose own sources offer
# libyyjson-dev (Debian 13 and later) installs that with apt-get; Debian 12 has none, so
# Debian 13's libyyjson0 and libyyjson-dev (they need only libc6 >= 2.14) are fetched with
# scripts/debian-fetch.sh (apt-get download PACKAGE/trixie against a source list of its own) and
# installed with dpkg -i, leaving the machine's apt sources and pins as they were.
want_yyjson=0
if [[ $# -eq 0 ]]; then
  if ! pkg-config --exists yyjson 2>/dev/null &&
     [[ $(dpkg-query -W -f='${Status}' libyyjson-dev 2>/dev/null) != "install ok installed" ]]; then
    want_yyjson=1
  fi
else
  packages=("$@")
fi

missing=()
for p in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
  [[ "$status" == "install ok installed" ]] || missing+=("$p")
done
[[ ${#missing[@]} -eq 0 && $want_yyjson -eq 0 ]] && exit 0

sudo=()
if [[ $(id -u) -ne 0 ]]; then
  command -v sudo >/dev/null || { echo "need root (or sudo) to install: ${missing[*]} yyjson" >&2; exit 1; }
  sudo=(sudo)
fi
export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get update -qq
if [[ $want_yyjson -eq 1 ]]; then
  if apt-cache policy libyyjson-dev 2>/dev/null | grep -q 'Candidate: [0-9]'; then
    missing+=(libyyjson-dev)
  else
    echo "installing Debian 13's libyyjson0 and libyyjson-dev (this release has no yyjson)" >&2
    tmp=$(mktemp -d)
    # debian-fetch.sh runs as root: its lists and archives under $tmp are root's
    trap '"${sudo[@]}" rm -rf "$tmp"' EXIT
    "${sudo[@]}" "$(dirname "$0")/debian-fetch.sh" trixie "$tmp" libyyjson0 libyyjson-dev
    "${sudo[@]}" dpkg -i "$tmp"/libyyjson0_*.deb "$tmp"/libyyjson-dev_*.deb >/dev/null
  fi
fi
if [[ ${#missing[@]} -gt 0 ]]; then
  echo "installing missing packages: ${missing[*]}" >&2
  "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
