#!/usr/bin/env bash
# profile.sh — CPU and heap profiles of the gateway under load (docs/benchmarks.md).
# Starts a fleet (one prefill + one decode smg-sim and smg with --pprof-addr on loopback)
# through `smg-bench compare --gateway-only`, takes a CPU profile of SECONDS seconds while
# it runs, then a heap profile, and prints the top functions.
#   test/load/profile.sh [sglang|vllm] [concurrency] [stream|non-stream]
# Output: $OUT/cpu.pb.gz and $OUT/heap.pb.gz (OUT default /tmp/smg-profile); inspect with
#   go tool pprof -http 127.0.0.1:8080 bin/smg /tmp/smg-profile/cpu.pb.gz
set -euo pipefail
cd "$(dirname "$0")/../.."
GO=${GO:-go}
BIN=${BIN:-bin}
ENGINE=${1:-sglang}
CONC=${2:-32}
MODE=${3:-non-stream}
SECONDS_=${SECONDS_PROFILE:-10}
OUT=${OUT:-/tmp/smg-profile}
PPROF=${PPROF_ADDR:-127.0.0.1:16060}
mkdir -p "$OUT"
$GO build -o "$BIN/smg" ./cmd/smg
$GO build -o "$BIN/smg-sim" ./cmd/smg-sim
$GO build -o "$BIN/smg-bench" ./cmd/smg-bench

stream=()
[[ "$MODE" == "stream" ]] && stream=(--stream)
# Bounded: the load phase lasts SECONDS+6 s at most (and at most 10 million requests).
"$BIN/smg-bench" compare --bin "$BIN" --engine "$ENGINE" --concurrency "$CONC" "${stream[@]}" \
	--gateway-only --warmup 0 --duration "$((SECONDS_ + 6))s" --requests 10000000 \
	--gateway-arg="--pprof-addr=$PPROF" >"$OUT/load.txt" 2>&1 &
load=$!
trap 'kill "$load" 2>/dev/null || true' EXIT
for _ in $(seq 50); do curl -sf "http://$PPROF/debug/pprof/" >/dev/null && break; sleep 0.1; done
sleep 2
curl -sf -o "$OUT/cpu.pb.gz" "http://$PPROF/debug/pprof/profile?seconds=$SECONDS_"
curl -sf -o "$OUT/heap.pb.gz" "http://$PPROF/debug/pprof/heap"
wait "$load" || true
trap - EXIT
cat "$OUT/load.txt"
echo "== CPU, top by cumulative time"
$GO tool pprof -top -cum -nodecount 40 "$BIN/smg" "$OUT/cpu.pb.gz" 2>/dev/null | sed -n '1,50p'
echo "== allocations, top by space"
$GO tool pprof -sample_index=alloc_space -top -nodecount 20 "$BIN/smg" "$OUT/heap.pb.gz" 2>/dev/null | sed -n '1,30p'
