#!/usr/bin/env bash
# The TypeScript client (clients/typescript): installs openapi-typescript, openapi-fetch and
# typescript at the versions of clients/typescript/package.json, and @redocly/cli at
# REDOCLY_VERSION, into an ignored cache folder keyed by those versions
# (.cache/tsclient-<versions>/, fetched once, offline-safe after), and
# @stoplight/spectral-cli at SPECTRAL_VERSION into .cache/spectral-<version>/; lints both
# committed documents with redocly (openapi/redocly.yaml) and with Spectral's spectral:oas
# ruleset (openapi/spectral.yaml, failing on any warning), regenerates src/schema.d.ts from
# openapi/openapi.yaml and compiles the client with tsc.
#   check.sh           fail when the committed schema.d.ts differs from a fresh generation,
#                      then compile (make openapi-check, and so make test)
#   check.sh --write   rewrite src/schema.d.ts, then compile (make openapi)
set -euo pipefail
cd "$(dirname "$0")/../.."
command -v npm >/dev/null || { echo "tools/tsclient/check.sh: npm is required" >&2; exit 1; }

PKG=clients/typescript
ver() { node -p "const p=require('./${PKG}/package.json'); (p.dependencies||{})['$1']||(p.devDependencies||{})['$1']"; }
OT="$(ver openapi-typescript)" OF="$(ver openapi-fetch)" TS="$(ver typescript)"
RL="${REDOCLY_VERSION:-2.77.0}"
CACHE=".cache/tsclient-ot${OT}-of${OF}-ts${TS}-rl${RL}"
if [ ! -f "$CACHE/.complete" ]; then
	mkdir -p "$CACHE"
	echo "fetching openapi-typescript@${OT} openapi-fetch@${OF} typescript@${TS} @redocly/cli@${RL} into ${CACHE}"
	npm install --prefix "$CACHE" --no-audit --no-fund --no-save --loglevel=error \
		"openapi-typescript@${OT}" "openapi-fetch@${OF}" "typescript@${TS}" "@redocly/cli@${RL}"
	touch "$CACHE/.complete"
fi
BIN="$(cd "$CACHE" && pwd)/node_modules/.bin"

REDOCLY_TELEMETRY=off REDOCLY_SUPPRESS_UPDATE_NOTICE=true "$BIN/redocly" lint \
	--config openapi/redocly.yaml --format=summary openapi/openapi.yaml openapi/openapi-3.0.yaml

SP="${SPECTRAL_VERSION:-6.16.3}"
SPCACHE=".cache/spectral-${SP}"
if [ ! -f "$SPCACHE/.complete" ]; then
	mkdir -p "$SPCACHE"
	echo "fetching @stoplight/spectral-cli@${SP} into ${SPCACHE}"
	npm install --prefix "$SPCACHE" --no-audit --no-fund --no-save --loglevel=error "@stoplight/spectral-cli@${SP}"
	touch "$SPCACHE/.complete"
fi
"$SPCACHE/node_modules/.bin/spectral" lint --fail-severity=warn --ruleset openapi/spectral.yaml \
	openapi/openapi.yaml openapi/openapi-3.0.yaml

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
"$BIN/openapi-typescript" openapi/openapi.yaml -o "$tmp/schema.d.ts" --silent
if [ "${1:-}" = "--write" ]; then
	cp "$tmp/schema.d.ts" "$PKG/src/schema.d.ts"
elif ! diff -q "$PKG/src/schema.d.ts" "$tmp/schema.d.ts" >/dev/null; then
	echo "clients/typescript/src/schema.d.ts is stale: run 'make openapi'" >&2
	diff -u "$PKG/src/schema.d.ts" "$tmp/schema.d.ts" | head -40 >&2
	exit 1
fi

# Compile a copy next to the cached node_modules (the client folder holds no node_modules).
mkdir -p "$tmp/client"
cp -r "$PKG/src" "$PKG/tsconfig.json" "$PKG/package.json" "$tmp/client/"
ln -s "$(cd "$CACHE" && pwd)/node_modules" "$tmp/client/node_modules"
"$BIN/tsc" -p "$tmp/client"
test -s "$tmp/client/dist/index.js" && test -s "$tmp/client/dist/index.d.ts"
echo "clients/typescript: schema.d.ts up to date, tsc compiled"
