#!/usr/bin/env bash
# tests/bench/callgrind-request.sh [REQUESTS] [ENDPOINT]: instructions per keep-alive review,
# TLS and HTTP included, counted by callgrind in the server.
#
# Serves build/release/gpuadmit (default policy, no cluster view, one worker thread) under
# valgrind --tool=callgrind with instrumentation off, sends 50 reviews to warm up, turns it on,
# sends REQUESTS (default 500) more of tests/bench/data/training-pod-review.json on one keep-alive
# connection (curl reuses it across the URLs of one invocation), turns it off and prints
# "N instructions per request (TOTAL over REQUESTS)". Valgrind runs the server about 50 times
# slower, which does not change what it counts. CALLGRIND_OUT keeps the profile for
# callgrind_annotate (a temporary folder otherwise).
set -euo pipefail
cd "$(dirname "$0")/../.."
n=${1:-500}
endpoint=${2:-validate}
review=tests/bench/data/training-pod-review.json
tmp=$(mktemp -d)
out=${CALLGRIND_OUT:-$tmp/callgrind.out}
pid=
cleanup() {
    [ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
    rm -rf "$tmp"
}
trap cleanup EXIT
[ -x build/release/gpuadmit ] || make -s all
build/release/gpuadmit certs --out "$tmp/certs" --dns localhost --ip 127.0.0.1 >/dev/null 2>&1
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file="$out" \
    build/release/gpuadmit serve --listen "127.0.0.1:$port" --tls-cert "$tmp/certs/tls.crt" \
    --tls-key "$tmp/certs/tls.key" --rules rules --no-cluster --threads 1 \
    --log-level error 2>"$tmp/server.log" &
pid=$!
url="https://127.0.0.1:$port"
for _ in $(seq 300); do
    curl -fsS --cacert "$tmp/certs/ca.crt" "$url/healthz" >/dev/null 2>&1 && break
    sleep 0.2
done
send() { # COUNT: one curl, one connection, COUNT reviews; each answer must allow
    local urls=()
    for _ in $(seq "$1"); do urls+=("$url/$endpoint" -o /dev/null); done
    curl -sS --cacert "$tmp/certs/ca.crt" -H 'Content-Type: application/json' \
        --data-binary @"$review" "${urls[@]}" -w '%{http_code}\n' |
        sort | uniq -c | awk -v want="$1" '$2 != 200 || $1 != want { bad = 1 } END { exit bad }' ||
        { echo "callgrind-request: not every answer was 200" >&2; exit 1; }
}
send 50
callgrind_control -i on "$pid" >/dev/null 2>&1
send "$n"
callgrind_control -i off "$pid" >/dev/null 2>&1
callgrind_control -d "$pid" >/dev/null 2>&1
kill "$pid"
wait "$pid" 2>/dev/null || true
pid=
total=$(cat "$out"* | awk '/^totals:/ { s += $2 } END { print s + 0 }')
echo "$((total / n)) instructions per request ($total over $n, /$endpoint)"
