// Command etcd is etcd 3.7.3 (go.etcd.io/etcd/server/v3/etcdmain) for the Kubernetes
// discovery tests: Debian's etcd 3.4 lacks RequestWatchProgress, which kube-apiserver 1.37
// watches need.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
