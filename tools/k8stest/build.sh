#!/bin/bash
# Builds kube-apiserver v1.37.2 and etcd v3.7.3 for the Kubernetes discovery tests into
# the user cache folder, ${XDG_CACHE_HOME:-~/.cache}/smg-k8s/<versions>/ (or $SMG_K8S_BIN), once:
# a warm cache makes it a no-op, and fresh clones on the same machine share it. A cold build
# takes about 7 minutes of CPU (../shared/reference/k8s-deploy.md). Prints the directory.
set -euo pipefail
cd "$(dirname "$0")"
ROOT=$(cd ../.. && pwd)
K8S=v1.37.2 ETCD=v3.7.3
OUT=${SMG_K8S_BIN:-${XDG_CACHE_HOME:-$HOME/.cache}/smg-k8s/apiserver-$K8S-etcd-$ETCD}
if [ "${1:-}" = --check ]; then # exit 0 when both binaries are already built
  [ -x "$OUT/kube-apiserver" ] && [ -x "$OUT/etcd" ] && { echo "$OUT"; exit 0; }
  exit 1
fi
mkdir -p "$OUT"
if [ ! -x "$OUT/kube-apiserver" ]; then
  (cd apiserver && GOFLAGS=-mod=mod go mod tidy >/dev/null 2>&1 || true
   LDF="-s -w -X k8s.io/component-base/version.gitVersion=$K8S -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=37"
   GOFLAGS=-mod=mod go build -o "$OUT/kube-apiserver.tmp" -ldflags "$LDF" k8s.io/kubernetes/cmd/kube-apiserver)
  mv "$OUT/kube-apiserver.tmp" "$OUT/kube-apiserver"
fi
if [ ! -x "$OUT/etcd" ]; then
  (cd etcd && GOFLAGS=-mod=mod go mod tidy >/dev/null 2>&1 || true
   GOFLAGS=-mod=mod go build -o "$OUT/etcd.tmp" -ldflags "-s -w" .)
  mv "$OUT/etcd.tmp" "$OUT/etcd"
fi
echo "$OUT"
