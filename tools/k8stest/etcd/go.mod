module github.com/smg-go/smg/tools/k8stest/etcd

go 1.26.0

require go.etcd.io/etcd/server/v3 v3.7.3
