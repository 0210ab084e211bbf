package redistest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/smg-go/smg/adapters/store/redis"
)

// EnvClusterURL names the environment variable with the Redis Cluster tests must use: a
// comma list of seed addresses ("127.0.0.1:7101,127.0.0.1:7102") or a cluster URL
// ("redis://127.0.0.1:7101,127.0.0.1:7102"). A failure to reach it fails the test.
const EnvClusterURL = "SMG_TEST_REDIS_CLUSTER"

// EnvRequireCluster names the environment variable that, set to 1 (or CI=true), turns a
// missing cluster into a test failure instead of a skip.
const EnvRequireCluster = "SMG_REQUIRE_REDIS_CLUSTER"

// clusterMasters is the size of the cluster started for the tests.
const clusterMasters = 3

var (
	clusterOnce sync.Once
	clusterURL  string
	clusterWhy  string
	clusterDir  string
	clusterCmds []*exec.Cmd
)

// ClusterURL returns the Redis Cluster URL tests use ("redis://h1:p1,h2:p2,h3:p3"). In
// order: SMG_TEST_REDIS_CLUSTER, else a 3-master cluster of redis-server processes started
// on free loopback ports (client and bus ports both from the kernel, so 6379 and other
// servers are never touched) for this test binary and stopped by Stop. Without
// redis-server and redis-cli the test is skipped, or fails when SMG_REQUIRE_REDIS_CLUSTER=1
// or CI=true.
func ClusterURL(t testing.TB) string {
	t.Helper()
	clusterOnce.Do(findCluster)
	if clusterURL == "" {
		if os.Getenv(EnvClusterURL) != "" || os.Getenv(EnvRequireCluster) == "1" || os.Getenv("CI") == "true" {
			t.Fatalf("redis cluster: %s", clusterWhy)
		}
		t.Skipf("redis cluster: %s; install redis-server and redis-tools, or set %s=127.0.0.1:<port>,...", clusterWhy, EnvClusterURL)
	}
	return clusterURL
}

// ClusterClient returns a cluster client on the test cluster and a random key prefix of its
// own. When t ends, the prefix's keys are deleted on every master and the client closed.
func ClusterClient(t testing.TB) (*goredis.ClusterClient, string) {
	t.Helper()
	c := newClusterClient(t, ClusterURL(t))
	p := Prefix()
	t.Cleanup(func() {
		defer c.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = c.ForEachMaster(ctx, func(ctx context.Context, n *goredis.Client) error {
			it := n.Scan(ctx, 0, p+"*", 256).Iterator()
			for it.Next(ctx) {
				_ = n.Unlink(ctx, it.Val()).Err()
			}
			return nil
		})
	})
	return c, p
}

func newClusterClient(t testing.TB, u string) *goredis.ClusterClient {
	t.Helper()
	o, err := redis.ParseClusterURL(u)
	if err != nil {
		t.Fatalf("redis cluster url: %v", err)
	}
	return goredis.NewClusterClient(o)
}

func findCluster() {
	if v := os.Getenv(EnvClusterURL); v != "" {
		if !strings.Contains(v, "://") {
			v = "redis://" + v
		}
		if err := clusterOK(v, time.Second); err != nil {
			clusterWhy = fmt.Sprintf("%s=%s is not a healthy cluster: %v", EnvClusterURL, v, err)
			return
		}
		clusterURL = v
		return
	}
	server, err := exec.LookPath("redis-server")
	if err != nil {
		clusterWhy = "redis-server is not installed"
		return
	}
	cli, err := exec.LookPath("redis-cli")
	if err != nil {
		clusterWhy = "redis-cli is not installed (Debian: redis-tools)"
		return
	}
	if err := startCluster(server, cli); err != nil {
		stopCluster()
		clusterWhy = "starting a local cluster: " + err.Error()
	}
}

// startCluster starts clusterMasters redis-server processes with cluster mode on, joins
// them with `redis-cli --cluster create` (no replicas) and waits for cluster_state:ok.
func startCluster(server, cli string) error {
	dir, err := os.MkdirTemp("", "smg-redis-cluster-")
	if err != nil {
		return err
	}
	clusterDir = dir
	var addrs []string
	for i := 0; i < clusterMasters; i++ {
		port, err := freePort()
		if err != nil {
			return err
		}
		bus, err := freePort()
		if err != nil {
			return err
		}
		nd := filepath.Join(dir, strconv.Itoa(port))
		if err := os.MkdirAll(nd, 0o755); err != nil {
			return err
		}
		cmd := exec.Command(server, "--bind", "127.0.0.1", "--port", strconv.Itoa(port),
			"--cluster-enabled", "yes", "--cluster-port", strconv.Itoa(bus),
			"--cluster-config-file", filepath.Join(nd, "nodes.conf"), "--cluster-node-timeout", "2000",
			"--save", "", "--appendonly", "no", "--dir", nd, "--logfile", filepath.Join(nd, "redis.log"))
		cmd.SysProcAttr = dieWithParent()
		if err := cmd.Start(); err != nil {
			return fmt.Errorf("redis-server: %w", err)
		}
		clusterCmds = append(clusterCmds, cmd)
		addrs = append(addrs, fmt.Sprintf("127.0.0.1:%d", port))
	}
	for _, a := range addrs {
		if err := waitPing("redis://"+a, 5*time.Second); err != nil {
			return fmt.Errorf("%s: %w", a, err)
		}
	}
	args := append([]string{"--cluster", "create"}, addrs...)
	args = append(args, "--cluster-replicas", "0", "--cluster-yes")
	if out, err := exec.Command(cli, args...).CombinedOutput(); err != nil {
		return fmt.Errorf("redis-cli --cluster create: %w: %s", err, out)
	}
	u := "redis://" + strings.Join(addrs, ",")
	deadline := time.Now().Add(15 * time.Second)
	for {
		err := clusterOK(u, time.Second)
		if err == nil {
			clusterURL = u
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not ready within 15s: %w", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// clusterOK checks that every seed reports cluster_state:ok and all 16384 slots assigned.
func clusterOK(u string, timeout time.Duration) error {
	for _, a := range strings.Split(strings.TrimSuffix(strings.TrimPrefix(u, "redis://"), "/0"), ",") {
		c := goredis.NewClient(&goredis.Options{Addr: a})
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		info, err := c.ClusterInfo(ctx).Result()
		cancel()
		_ = c.Close()
		if err != nil {
			return fmt.Errorf("%s: %w", a, err)
		}
		if !strings.Contains(info, "cluster_state:ok") || !strings.Contains(info, "cluster_slots_ok:16384") {
			return fmt.Errorf("%s: cluster not ok yet", a)
		}
	}
	return nil
}

func waitPing(u string, within time.Duration) error {
	deadline := time.Now().Add(within)
	for {
		err := ping(u)
		if err == nil || time.Now().After(deadline) {
			return err
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func stopCluster() {
	for _, c := range clusterCmds {
		_ = c.Process.Kill()
		_ = c.Wait()
	}
	clusterCmds = nil
	if clusterDir != "" {
		_ = os.RemoveAll(clusterDir)
		clusterDir = ""
	}
}
