#!/usr/bin/env bash
# Runs one libFuzzer target: tests/fuzz/run.sh TARGET SECONDS [check]
# New corpus goes to build/fuzz/corpus/TARGET (never committed), crashes to
# build/fuzz/findings/TARGET/, the log to build/fuzz/logs/TARGET.log. Ends with one summary line:
#   fuzz_TARGET: N runs in S s, cov: C ft: F corp: K, 0 findings
# With "check", the committed regression inputs are run first (each must pass), and the run
# starts from a scratch copy of the corpus (build/fuzz/check/TARGET), so a check adds nothing to
# the long-run corpus. The exit status is non-zero on any finding.
set -uo pipefail
t=$1 secs=$2 mode=${3:-}
bin=build/fuzz/fuzz_$t
reg=tests/fuzz/regressions/$t
mkdir -p build/fuzz/findings/$t build/fuzz/logs
export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=1:allocator_may_return_null=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
passed=0
if [[ $mode == check ]]; then
  if compgen -G "$reg/*" >/dev/null; then
    "$bin" -runs=1 "$reg"/* >build/fuzz/logs/$t.regressions.log 2>&1 || {
      echo "fuzz_$t: a regression input fails again (build/fuzz/logs/$t.regressions.log)"
      tail -n 30 build/fuzz/logs/$t.regressions.log
      exit 1
    }
    passed=$(compgen -G "$reg/*" | wc -l)
  fi
  corpus=build/fuzz/check/$t
  rm -rf "$corpus"
  mkdir -p "$corpus"
else
  corpus=build/fuzz/corpus/$t
  mkdir -p "$corpus"
fi
seeds=()
for d in tests/fuzz/corpus/$t "$reg"; do [[ -d $d ]] && seeds+=("$d"); done
start=$SECONDS
"$bin" -max_total_time="$secs" -dict=tests/fuzz/k8s.dict -print_final_stats=1 -timeout=10 \
  -rss_limit_mb=2560 -artifact_prefix=build/fuzz/findings/$t/ "$corpus" "${seeds[@]}" \
  >build/fuzz/logs/$t.log 2>&1
rc=$?
last=$(grep -E '^#[0-9]+' build/fuzz/logs/$t.log | tail -n 1)
runs=$(sed -nE 's/^stat::number_of_executed_units: *([0-9]+).*/\1/p' build/fuzz/logs/$t.log)
cov=$(sed -nE 's/.* (cov: [0-9]+ ft: [0-9]+ corp: [0-9]+\/[0-9]+[a-zA-Z]*).*/\1/p' <<<"$last")
if [[ $rc -ne 0 ]]; then
  echo "fuzz_$t: FINDING after $((SECONDS - start)) s (build/fuzz/logs/$t.log, build/fuzz/findings/$t/)"
  grep -E 'ERROR|invariant|SUMMARY|runtime error' build/fuzz/logs/$t.log | head -n 5
  echo "fuzz_$t: $passed passed, 1 failed"
  exit 1
fi
echo "fuzz_$t: ${runs:-?} runs in $((SECONDS - start)) s, ${cov:-?}, 0 findings"
echo "fuzz_$t: $((passed + 1)) passed, 0 failed"
