//go:build tools

// Package tools pins kube-apiserver for the Kubernetes discovery tests. It is its own
// module so k8s.io/kubernetes never enters smg's go.mod; build.sh builds the binary.
package tools

import _ "k8s.io/kubernetes/cmd/kube-apiserver"
