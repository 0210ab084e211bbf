#!/usr/bin/env bash
# make lint: staticcheck (checks in staticcheck.conf) over the gateway module. Findings listed
# in tools/lint/baseline.txt ("<file>: <check>", one a line, # comments) are reported but do
# not fail; any other finding fails, and so does a baseline entry that no longer occurs (fixed
# code must leave the baseline too, so it only shrinks).
set -euo pipefail
staticcheck=${1:?path to the staticcheck binary}
baseline=$(dirname "$0")/baseline.txt
out=$(mktemp)
trap 'rm -f "$out"' EXIT
rc=0
"$staticcheck" -f text ./... >"$out" 2>&1 || rc=$?
if [ "$rc" -ne 0 ] && [ "$rc" -ne 1 ]; then cat "$out"; exit "$rc"; fi
# "<file>:<line>:<col>: <message> (<check>)" -> "<file>: <check>"
fail=0
while IFS= read -r line; do
	[ -n "$line" ] || continue
	file=${line%%:*}
	check=$(sed -n 's/.*(\([A-Z][A-Z]*[0-9][0-9]*\))$/\1/p' <<<"$line")
	if [ -n "$check" ] && grep -qxF "$file: $check" <(grep -v '^#' "$baseline"); then
		echo "baseline: $line"
	else
		echo "$line"
		fail=1
	fi
done <"$out"
while IFS= read -r entry; do
	case "$entry" in '' | '#'*) continue ;; esac
	file=${entry%%: *}
	check=${entry##*: }
	if ! grep -q "^$file:[0-9]*:[0-9]*: .*($check)\$" "$out"; then
		echo "tools/lint/baseline.txt: '$entry' no longer occurs; remove it"
		fail=1
	fi
done <"$baseline"
[ "$fail" -eq 0 ] && echo "staticcheck: ok"
exit "$fail"
