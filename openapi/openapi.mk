# OpenAPI documents and the clients generated from them (docs/openapi.md). Included by the
# Makefile.

.PHONY: openapi-check

## openapi: regenerate the committed OpenAPI documents (3.1 and its 3.0 downgrade), the Go
## client (oapi-codegen, pinned in tools/oapigen) and the TypeScript client's types
## (openapi-typescript, fetched into .cache/ like the tokenizer fixtures)
openapi:
	$(GO) run ./cmd/smg openapi -o openapi/openapi.yaml
	$(GO) run ./cmd/smg openapi --spec-version 3.0 -o openapi/openapi-3.0.yaml
	./tools/oapigen/gen.sh
	./tools/tsclient/check.sh --write

## openapi-check: the generated clients match the committed documents, and the TypeScript
## client compiles with tsc (the Go client compiles, and is used, in go test ./test/openapi)
openapi-check:
	./tools/oapigen/gen.sh --check
	./tools/tsclient/check.sh
