#!/usr/bin/env bash
# Refreshes the API reference viewer that `smg` embeds and serves at /docs/assets/
# (adapters/api/docsui/assets): Stoplight Elements' web component bundle and stylesheet from
# the npm package at a pinned version. The files are committed (go:embed needs them at build
# time, and air-gapped clusters cannot load them from a CDN); run this only to change version.
set -euo pipefail
cd "$(dirname "$0")/../.."

VERSION="${ELEMENTS_VERSION:-9.0.25}"
OUT="adapters/api/docsui/assets"
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
command -v npm >/dev/null || { echo "tools/docsui/vendor.sh: npm is required" >&2; exit 1; }
(cd "$TMP" && npm pack --silent "@stoplight/elements@${VERSION}" >/dev/null && tar xzf ./*.tgz)
install -m 0644 "$TMP/package/web-components.min.js" "$OUT/web-components.min.js"
install -m 0644 "$TMP/package/styles.min.css" "$OUT/styles.min.css"
install -m 0644 "$TMP/package/LICENSE" "$OUT/LICENSE"
install -m 0644 "$TMP/package/web-components.min.js.LICENSE.txt" "$OUT/web-components.min.js.LICENSE.txt"
echo "$VERSION" > "$OUT/VERSION"
echo "vendored @stoplight/elements@${VERSION} into ${OUT}"
