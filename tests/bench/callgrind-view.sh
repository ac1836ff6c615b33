#!/bin/bash
# tests/bench/callgrind-view.sh [bench_view options]: instructions per capacity decision, counted by
# callgrind (repeatable where wall time on a shared machine is not). Runs
# build/release/tests/bench/bench_view --callgrind under valgrind with instrumentation off until the
# decisions start, then prints Ir per decision and per baseline scan. Example:
#   tests/bench/callgrind-view.sh --scale 0.2 --calls 200
# The profiles stay in $CALLGRIND_DIR (default: a temporary folder, printed) for
# callgrind_annotate.
set -euo pipefail
bin=${BENCH_VIEW:-build/release/tests/bench/bench_view}
dir=${CALLGRIND_DIR:-$(mktemp -d)}
calls=2000
args=("$@")
for ((i = 0; i < ${#args[@]}; i++)); do
    [[ ${args[i]} == --calls ]] && calls=${args[i + 1]}
done
valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file="$dir/callgrind.out.%p" \
    "$bin" --callgrind "$@" >"$dir/stdout" 2>"$dir/stderr" || { cat "$dir/stderr" >&2; exit 1; }
cat "$dir/stdout"
for what in decisions baseline; do
    f=$(grep -l "^desc: Trigger: Client Request: $what$" "$dir"/callgrind.out.* | head -1)
    ir=$(awk '/^(summary|totals):/ { print $2; exit }' "$f")
    echo "$what: $ir Ir in $calls calls = $((ir / calls)) Ir per call ($f)"
done
