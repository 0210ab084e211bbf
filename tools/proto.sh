#!/usr/bin/env bash
# Regenerates the Go code of the engine protos (adapters/engine/grpcengine/proto/*.proto)
# into adapters/engine/grpcengine/pb/<engine>/, or into the directory given as $1 (the
# staleness test generates into a temporary directory and compares).
#
# protoc is Debian's protobuf-compiler (+ libprotobuf-dev for the well-known types); the
# plugins are built with `go install` at the pinned versions below into a cache directory
# (shared/reference/deps.md, grpc.md §2.5). The .proto files carry no go_package: the M
# options give each proto its own Go package, so same-named messages never collide.
set -euo pipefail
cd "$(dirname "$0")/.."

PROTOC_GEN_GO_VERSION=v1.36.12
PROTOC_GEN_GO_GRPC_VERSION=v1.6.2
MOD=github.com/smg-go/smg/adapters/engine/grpcengine/pb
SRC=adapters/engine/grpcengine/proto
OUT=${1:-adapters/engine/grpcengine/pb}
CACHE=${SMG_PROTO_TOOLS:-$PWD/.cache/proto-tools/go-${PROTOC_GEN_GO_VERSION}_grpc-${PROTOC_GEN_GO_GRPC_VERSION}}
PROTOC=${PROTOC:-protoc}

command -v "$PROTOC" >/dev/null || {
	echo "tools/proto.sh: protoc not found: apt-get install -y protobuf-compiler libprotobuf-dev" >&2
	exit 1
}
mkdir -p "$CACHE"
[ -x "$CACHE/protoc-gen-go" ] || GOBIN="$CACHE" go install "google.golang.org/protobuf/cmd/protoc-gen-go@$PROTOC_GEN_GO_VERSION"
[ -x "$CACHE/protoc-gen-go-grpc" ] || GOBIN="$CACHE" go install "google.golang.org/grpc/cmd/protoc-gen-go-grpc@$PROTOC_GEN_GO_GRPC_VERSION"

# proto file -> Go package directory and name
declare -A DIR=(
	[common.proto]=common
	[sglang_scheduler.proto]=sglang
	[vllm_engine.proto]=vllm
	[tokenspeed_scheduler.proto]=tokenspeed
	[tokenspeed_encoder.proto]=tokenspeedencoder
)
M=""
for f in "${!DIR[@]}"; do
	M="$M,M$f=$MOD/${DIR[$f]};${DIR[$f]}pb"
done
M=${M#,}

INC=()
for d in /usr/include /usr/local/include; do
	[ -f "$d/google/protobuf/struct.proto" ] && INC+=(-I "$d")
done

for f in "${!DIR[@]}"; do
	dst="$OUT/${DIR[$f]}"
	mkdir -p "$dst"
	rm -f "$dst"/*.pb.go
	"$PROTOC" -I "$SRC" "${INC[@]}" \
		--plugin=protoc-gen-go="$CACHE/protoc-gen-go" \
		--plugin=protoc-gen-go-grpc="$CACHE/protoc-gen-go-grpc" \
		--go_out="$dst" --go_opt=paths=source_relative,"$M" \
		--go-grpc_out="$dst" --go-grpc_opt=paths=source_relative,"$M" \
		"$SRC/$f"
done
