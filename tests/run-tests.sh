#!/usr/bin/env bash
# Runs unit test binaries; each prints "name: N passed, M failed". Fails when any fails.
set -uo pipefail
rc=0
for t in "$@"; do
  "$t" || { echo "FAILED: $t" >&2; rc=1; }
done
exit $rc
