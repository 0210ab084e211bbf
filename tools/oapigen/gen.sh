#!/usr/bin/env bash
# Regenerates the Go client clients/go/smgclient/client.gen.go from openapi/openapi-3.0.yaml
# with oapi-codegen at the version pinned in tools/oapigen/go.mod (a module of its own, so the
# generator stays out of the gateway's dependencies). With --check, generates into a
# temporary file and fails when the committed client differs (make openapi-check).
set -euo pipefail
cd "$(dirname "$0")"
out=../../clients/go/smgclient/client.gen.go
if [ "${1:-}" = "--check" ]; then
	tmp="$(mktemp -d)"
	trap 'rm -rf "$tmp"' EXIT
	sed "s|^output: .*|output: $tmp/client.gen.go|" smgclient.yaml >"$tmp/config.yaml"
	go run github.com/oapi-codegen/oapi-codegen/v2/cmd/oapi-codegen -config "$tmp/config.yaml" ../../openapi/openapi-3.0.yaml
	if ! diff -q "$out" "$tmp/client.gen.go" >/dev/null; then
		echo "clients/go/smgclient/client.gen.go is stale: run 'make openapi'" >&2
		diff -u "$out" "$tmp/client.gen.go" | head -40 >&2
		exit 1
	fi
	exit 0
fi
go run github.com/oapi-codegen/oapi-codegen/v2/cmd/oapi-codegen -config smgclient.yaml ../../openapi/openapi-3.0.yaml
