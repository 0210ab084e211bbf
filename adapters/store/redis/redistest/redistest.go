// Package redistest finds a real Redis server for tests. In order: SMG_TEST_REDIS_URL (a
// failure to reach it fails the test), a Redis answering on 127.0.0.1:6379, a
// `redis-server` binary started on a free loopback port for this test binary. Only when
// none of these exists is the test skipped, with a message saying how to run it. Every
// test gets its own random key prefix, so tests run in parallel on one server.
package redistest

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	goredis "github.com/redis/go-redis/v9"
)

// EnvURL names the environment variable with the Redis URL tests must use.
const EnvURL = "SMG_TEST_REDIS_URL"

const localURL = "redis://127.0.0.1:6379/0"

var (
	once    sync.Once
	url     string
	why     string
	started *exec.Cmd
)

// URL returns the Redis URL tests use, or skips t (or fails it when SMG_TEST_REDIS_URL
// is set but unreachable).
func URL(t testing.TB) string {
	t.Helper()
	once.Do(find)
	if url == "" {
		if os.Getenv(EnvURL) != "" {
			t.Fatalf("redis: %s", why)
		}
		t.Skipf("redis: no server (%s); set %s=redis://127.0.0.1:<port>/0 or install redis-server to run this test", why, EnvURL)
	}
	return url
}

// Client returns a client on the test Redis and a random key prefix "smgtest:<uuid>:" of
// its own. When t ends, the prefix's keys are deleted and the client closed.
func Client(t testing.TB) (*goredis.Client, string) {
	t.Helper()
	o, err := goredis.ParseURL(URL(t))
	if err != nil {
		t.Fatalf("redis url: %v", err)
	}
	c, p := goredis.NewClient(o), Prefix()
	t.Cleanup(func() {
		defer c.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		it := c.Scan(ctx, 0, p+"*", 256).Iterator()
		for it.Next(ctx) {
			_ = c.Unlink(ctx, it.Val()).Err()
		}
	})
	return c, p
}

// Prefix returns a fresh random key prefix "smgtest:<uuid>:".
func Prefix() string { return "smgtest:" + uuid.NewString() + ":" }

func find() {
	if u := os.Getenv(EnvURL); u != "" {
		if err := ping(u); err != nil {
			why = fmt.Sprintf("%s=%s does not answer: %v", EnvURL, u, err)
			return
		}
		url = u
		return
	}
	if ping(localURL) == nil {
		url = localURL
		return
	}
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		why = "nothing answers on 127.0.0.1:6379 and redis-server is not installed"
		return
	}
	port, err := freePort()
	if err != nil {
		why = "no free port: " + err.Error()
		return
	}
	cmd := exec.Command(bin, "--bind", "127.0.0.1", "--port", strconv.Itoa(port),
		"--save", "", "--appendonly", "no")
	if err := cmd.Start(); err != nil {
		why = "redis-server did not start: " + err.Error()
		return
	}
	u := fmt.Sprintf("redis://127.0.0.1:%d/0", port)
	for i := 0; i < 100; i++ {
		if ping(u) == nil {
			started, url = cmd, u
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	why = "redis-server started but did not answer within 5s"
}

// Stop kills the redis-server processes this package started, the single server and the
// cluster (call from TestMain after m.Run).
func Stop() {
	if started != nil {
		_ = started.Process.Kill()
		_ = started.Wait()
	}
	stopCluster()
}

func ping(u string) error {
	o, err := goredis.ParseURL(u)
	if err != nil {
		return err
	}
	c := goredis.NewClient(o)
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	return c.Ping(ctx).Err()
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// DeadAddr returns a loopback address nothing listens on (connections are refused).
func DeadAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	return addr
}

// BlackHole returns a loopback address that accepts connections and never answers, like
// a Redis behind a dropped network path. Closed when t ends.
func BlackHole(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		_ = l.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			_ = c.Close()
		}
	})
	return l.Addr().String()
}
