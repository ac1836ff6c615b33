#!/usr/bin/env bash
# Runs test suites given as NAME COMMAND pairs, shows their output, adds up the closing lines
# ("... N passed, M failed") and ends with one total line. Exits non-zero when any suite fails.
set -uo pipefail
total_pass=0 total_fail=0 rc=0
while [[ $# -ge 2 ]]; do
  name=$1 cmd=$2
  shift 2
  echo "=== $name"
  start=$SECONDS
  out=$(mktemp)
  bash -c "$cmd" 2>&1 | tee "$out"
  status=${PIPESTATUS[0]}
  while read -r p f; do
    total_pass=$((total_pass + p)) total_fail=$((total_fail + f))
  done < <(sed -nE 's/^([A-Za-z0-9_-]+: )?([0-9]+) passed, ([0-9]+) failed.*$/\2 \3/p' "$out")
  rm -f "$out"
  if [[ $status -ne 0 ]]; then
    echo "=== $name FAILED (exit $status, $((SECONDS - start)) s)"
    rc=1
  else
    echo "=== $name ok ($((SECONDS - start)) s)"
  fi
done
echo "total: $total_pass passed, $total_fail failed"
[[ $total_fail -eq 0 && $rc -eq 0 ]]
