#!/usr/bin/env bash
# bench.sh — what `make bench` runs (issue #10; docs/benchmarks.md):
#   1. the hot-path Go micro-benchmarks with -benchmem (body patching, room minting, pair
#      selection with pairing, every policy, the dispatch handler and its SSE relay, one
#      engine leg), bounded by -benchtime and -timeout;
#   1b. BenchmarkDispatch alone (allocations per PD request), fed to the suite's overview;
#   2. smg-bench suite: gateway vs direct client, alternating A/B phases, on SGLang and vLLM
#      NIXL fleets of smg-sim engines (zero latency and realistic latency, non-streaming and
#      streaming), then open SSE streams held through one gateway; every phase is bounded
#      by a request count and a time limit, every target is 127.0.0.1;
#   3. smg-bench scale: gateway CPU per request with 2, 64 and 512 registered workers per leg
#      (one smg-sim --instances N process per leg), round_robin, power_of_two, cache_aware.
# Environment: GO (default go), BIN (default bin), BENCH_ARGS (extra `smg-bench suite`
# flags, e.g. "--pairs 3 --only sglang"), BENCH_SCALE_ARGS (extra `smg-bench scale` flags, e.g.
# "--sizes 2,512 --policy round_robin"), BENCH_SKIP_MICRO=1 to skip step 1,
# BENCH_BASELINE_BIN (a directory with an older build's smg and smg-sim: its suite runs
# first, for before/after figures from one run) and BENCH_BASELINE_ALLOCS (that build's
# BenchmarkDispatch output).
set -euo pipefail
cd "$(dirname "$0")/../.."
GO=${GO:-go}
BIN=${BIN:-bin}

start=$(date +%s)
echo "== build"
$GO build -o "$BIN/smg" ./cmd/smg
$GO build -o "$BIN/smg-sim" ./cmd/smg-sim
$GO build -o "$BIN/smg-bench" ./cmd/smg-bench

# The open-streams run needs two descriptors per stream in the gateway: use the hard limit.
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
echo "== machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo 2>/dev/null | cut -d: -f2 | sed 's/^ //'), load average $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null), open files $(ulimit -n)"

allocs=$(mktemp)
trap 'rm -f "$allocs"' EXIT
echo "== allocations per PD request (app/dispatch BenchmarkDispatch, -benchmem; deterministic)"
$GO test -run '^$' -bench '^BenchmarkDispatch$' -benchmem -benchtime 2000x -timeout 5m ./app/dispatch | tee "$allocs"
if [[ "${BENCH_SKIP_MICRO:-}" != "1" ]]; then
	echo "== micro-benchmarks"
	$GO test -run '^$' -bench . -benchmem -benchtime 200ms -timeout 5m \
		./domain/jsonbody ./domain/handoff ./domain/policy ./app/selection ./app/dispatch \
		./adapters/engine/httpengine ./domain/text
fi

if [[ -n "${BENCH_BASELINE_BIN:-}" ]]; then
	# Before/after in one run: the same suite against an older build's smg and smg-sim
	# (BENCH_BASELINE_ALLOCS: that build's BenchmarkDispatch output, optional).
	echo "== load comparison, baseline build in $BENCH_BASELINE_BIN"
	# shellcheck disable=SC2086
	"$BIN/smg-bench" suite --bin "$BENCH_BASELINE_BIN" ${BENCH_BASELINE_ALLOCS:+--allocs "$BENCH_BASELINE_ALLOCS"} ${BENCH_ARGS:-}
fi
echo "== load comparison (smg-bench suite)"
# shellcheck disable=SC2086
"$BIN/smg-bench" suite --bin "$BIN" --allocs "$allocs" ${BENCH_ARGS:-}
echo "== fleet size: gateway CPU per request at 2/64/512 workers per leg (smg-bench scale)"
# shellcheck disable=SC2086
"$BIN/smg-bench" scale --bin "$BIN" ${BENCH_SCALE_ARGS:-}
echo "== gRPC PD: gateway vs direct gRPC client (in-process, SGLang, zero latency)"
SMG_BENCH_GRPC=1 $GO test -run '^TestBenchGRPCGatewayVsDirect$' -count=1 -v -timeout 5m ./test/grpcfleet | grep -E 'pair|median|^(ok|FAIL|---)'
echo "== bench.sh took $(( $(date +%s) - start ))s"
