#!/usr/bin/env bash
# A 3-master Redis Cluster (no replicas) from Debian's redis-server, for the shared-state
# contract tests (SMG_TEST_REDIS_CLUSTER). Every bind is 127.0.0.1; the client ports are
# 7101-7103 and the cluster bus ports 17101-17103, so the Redis on 6379 is left alone.
#   .ci/redis-cluster.sh start DIR   # start, create the cluster, wait for cluster_state:ok;
#                                    # prints the seed list for SMG_TEST_REDIS_CLUSTER
#   .ci/redis-cluster.sh stop DIR    # kill the three servers (by their pid files), remove DIR
set -euo pipefail
cmd=${1:?start|stop}
dir=${2:?scratch directory}
ports=(7101 7102 7103)

case "$cmd" in
start)
	mkdir -p "$dir"
	addrs=()
	for p in "${ports[@]}"; do
		mkdir -p "$dir/$p"
		redis-server --port "$p" --bind 127.0.0.1 --cluster-enabled yes --cluster-port $((p + 10000)) \
			--cluster-config-file "$dir/$p/nodes.conf" --cluster-node-timeout 2000 \
			--save '' --appendonly no --dir "$dir/$p" --daemonize yes \
			--pidfile "$dir/$p/redis.pid" --logfile "$dir/$p/redis.log"
		addrs+=("127.0.0.1:$p")
	done
	for p in "${ports[@]}"; do
		for _ in $(seq 1 50); do
			redis-cli -p "$p" ping 2>/dev/null | grep -q PONG && break
			sleep 0.1
		done
	done
	redis-cli --cluster create "${addrs[@]}" --cluster-replicas 0 --cluster-yes >"$dir/create.log"
	for p in "${ports[@]}"; do
		ok=
		for _ in $(seq 1 150); do
			if redis-cli -p "$p" cluster info | grep -q cluster_state:ok; then ok=1; break; fi
			sleep 0.1
		done
		[ -n "$ok" ] || { echo "redis-cluster.sh: 127.0.0.1:$p not cluster_state:ok" >&2; exit 1; }
	done
	(IFS=,; echo "${addrs[*]}")
	;;
stop)
	for p in "${ports[@]}"; do
		[ -f "$dir/$p/redis.pid" ] && kill "$(cat "$dir/$p/redis.pid")" 2>/dev/null || true
	done
	rm -rf "$dir"
	;;
*)
	echo "usage: $0 start|stop DIR" >&2
	exit 2
	;;
esac
