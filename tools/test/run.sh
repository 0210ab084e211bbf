#!/usr/bin/env bash
# The body of `make test`: every check in phases, one line when a phase starts and one with
# its wall time when it ends, and a summary at the end. The slow one-off builds a new machine
# needs (kube-apiserver + etcd for the discovery and deploy tests, helm/kubeconform/promtool
# for the artefact checks: about 20 minutes on 2 cores when nothing is cached) run in the
# background at the lowest CPU priority while the suites that do not need them run; the
# packages that start a kube-apiserver run after that build has finished.
#
# Environment: GO (default go), MAKE (default make). Logs of the background build go to
# $SMG_TEST_LOG_DIR (default bin/test-logs).
set -euo pipefail
cd "$(dirname "$0")/../.."
GO=${GO:-go}
MAKE=${MAKE:-make}
LOG_DIR=${SMG_TEST_LOG_DIR:-bin/test-logs}
mkdir -p "$LOG_DIR"

T0=$(date +%s)
summary=()
fmt_secs() { printf '%dm%02ds' $(($1 / 60)) $(($1 % 60)); }
# phase NAME CMD...: runs CMD, prints start/end lines with wall time, records the summary.
phase() {
	local name=$1 start end rc
	shift
	start=$(date +%s)
	echo ">>> [$(fmt_secs $((start - T0)))] $name"
	set +e
	"$@"
	rc=$?
	set -e
	end=$(date +%s)
	summary+=("$(printf '%-70s %8s  %s' "$name" "$(fmt_secs $((end - start)))" "$([ $rc -eq 0 ] && echo ok || echo "FAILED (exit $rc)")")")
	echo "<<< [$(fmt_secs $((end - T0)))] $name: $(fmt_secs $((end - start)))$([ $rc -eq 0 ] || echo ", FAILED (exit $rc)")"
	if [ $rc -ne 0 ]; then
		print_summary
		exit $rc
	fi
}
print_summary() {
	echo
	echo "make test phases (wall time):"
	printf '  %s\n' "${summary[@]}"
	echo "  total: $(fmt_secs $(($(date +%s) - T0)))"
}

bg_pid=""
stop_bg() { [ -n "$bg_pid" ] && kill "$bg_pid" 2>/dev/null || true; }
trap stop_bg EXIT

phase "fixtures (tokenizer files, npm, once)" "$MAKE" -s fixtures

# The one-off builds, in the background. Both are no-ops when cached.
bg_log=$LOG_DIR/background-build.log
bg_start=$(date +%s)
if ! ./tools/k8stest/build.sh --check >/dev/null 2>&1 || ! "$MAKE" -s -q tools 2>/dev/null; then
	echo "    building kube-apiserver/etcd and helm/kubeconform/promtool in the background (lowest priority; first time on a machine, about 20 min on 2 cores; log: $bg_log)"
fi
(nice -n 19 "$MAKE" -s k8s-bins tools) >"$bg_log" 2>&1 &
bg_pid=$!

phase "go mod tidy -diff" "$GO" mod tidy -diff
phase "go vet" "$GO" vet ./...
phase "lint (staticcheck)" "$MAKE" -s lint

# Packages whose tests start a kube-apiserver (they import the k8stest harness) wait for the
# background build; test/shared runs alone at the end (three gateways on one Redis with 100 ms
# call timeouts: other packages' load would push Redis into its fallback).
mapfile -t all < <("$GO" list ./...)
mapfile -t k8s < <("$GO" list -f '{{.ImportPath}} {{join .Imports " "}} {{join .TestImports " "}} {{join .XTestImports " "}}' ./... |
	awk '{for (i = 2; i <= NF; i++) if ($i ~ /\/k8stest$/) {print $1; break}}')
main_pkgs=()
for p in "${all[@]}"; do
	case " ${k8s[*]} " in *" $p "*) continue ;; esac
	[[ $p == */test/shared ]] && continue
	main_pkgs+=("$p")
done
phase "go test -race (${#main_pkgs[@]} packages)" "$GO" test -race -timeout 20m "${main_pkgs[@]}"

wait_bg() {
	if ! kill -0 "$bg_pid" 2>/dev/null; then wait "$bg_pid" || { tail -30 "$bg_log"; return 1; }; return; fi
	echo "    waiting for the background build (started $(fmt_secs $(($(date +%s) - bg_start))) ago; log: $bg_log)"
	wait "$bg_pid" || { tail -30 "$bg_log"; return 1; }
}
phase "kube-apiserver, etcd, helm, kubeconform, promtool (background build)" wait_bg
bg_pid=""
if [ "${#k8s[@]}" -gt 0 ]; then
	phase "go test -race, kube-apiserver packages (${#k8s[@]})" "$GO" test -race -timeout 20m "${k8s[@]}"
fi
phase "go test -race ./test/shared/ (alone)" "$GO" test -race -timeout 10m ./test/shared/
phase "deploy-check" "$MAKE" -s deploy-check
phase "rules-check" "$MAKE" -s rules-check
phase "openapi-check" "$MAKE" -s openapi-check
print_summary
