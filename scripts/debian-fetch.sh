#!/usr/bin/env bash
# debian-fetch.sh SUITE DIR PACKAGE...: downloads the named packages' .deb files from another
# Debian suite (for example trixie, for what bookworm lacks) into DIR, without touching the
# machine's apt sources, pins or package lists: apt reads a one-line source list made here, for
# the mirror the machine already uses, and keeps its lists under DIR; the machine's pins are not
# read (they are about its own suites), and each package is asked for as PACKAGE/SUITE on
# apt-get download's command line. Installs nothing; the caller decides (dpkg -i, or dpkg-deb -x
# for a binary that must not run as a service).
set -euo pipefail

[[ $# -ge 3 ]] || { echo "usage: debian-fetch.sh SUITE DIR PACKAGE..." >&2; exit 2; }
suite=$1 dir=$2
shift 2

# The machine's own Debian mirror: the first URI of a deb822 source whose suites are Debian's
# (not -security), or of a one-line "deb" entry.
mirror=$(sed -n 's/^URIs:[[:space:]]*\([^[:space:]]*\).*/\1/p' /etc/apt/sources.list.d/*.sources \
           2>/dev/null | grep -v -- '-security' | head -n 1 || true)
if [[ -z "$mirror" && -f /etc/apt/sources.list ]]; then
  mirror=$(sed -n 's/^deb[[:space:]]\+\(\[[^]]*\][[:space:]]\+\)\?\([^[:space:]]*\).*/\2/p' \
             /etc/apt/sources.list | grep -v -- '-security' | head -n 1 || true)
fi
[[ -n "$mirror" ]] || { echo "debian-fetch.sh: no Debian mirror in the apt sources" >&2; exit 1; }

mkdir -p "$dir/lists/partial" "$dir/archives/partial"
keyring=/usr/share/keyrings/debian-archive-keyring.gpg
echo "deb [signed-by=$keyring] $mirror $suite main" > "$dir/sources.list"
apt_opts=(-o "Dir::Etc::SourceList=$dir/sources.list" -o Dir::Etc::SourceParts=/dev/null
          -o Dir::Etc::Preferences=/dev/null -o Dir::Etc::PreferencesParts=/dev/null
          -o "Dir::State::Lists=$dir/lists" -o "Dir::Cache::Archives=$dir/archives"
          -o APT::Get::List-Cleanup=0 -o APT::Sandbox::User=root -qq)
apt-get "${apt_opts[@]}" update
(cd "$dir" && apt-get "${apt_opts[@]}" download "${@/%//$suite}")
