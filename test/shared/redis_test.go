package shared_test

import (
	"context"
	"fmt"
	"net/url"
	"os/exec"
	"strconv"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/adapters/store/redis"
	"github.com/smg-go/smg/adapters/store/redis/redistest"
)

// leaseTTL is the Redis adapter's slot lease time (adapters/store/redis.DefaultLeaseTTL,
// not a flag): the slots of a killed instance come back within it.
const leaseTTL = redis.DefaultLeaseTTL

// redisDB returns the URL of database db on the suite's Redis server, flushed. Each test
// owns one database number (the gateway's key prefix is fixed).
func redisDB(t *testing.T, db int) string {
	t.Helper()
	u, err := url.Parse(redistest.URL(t))
	require.NoError(t, err)
	u.Path = "/" + strconv.Itoa(db)
	o, err := goredis.ParseURL(u.String())
	require.NoError(t, err)
	c := goredis.NewClient(o)
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	require.NoError(t, c.FlushDB(ctx).Err(), "FLUSHDB %s", u)
	return u.String()
}

// slotsOf opens the Redis slot counter the gateways use on url (same default prefix), to
// read InUse. Closed at cleanup.
func slotsOf(t *testing.T, url string) *redis.Slots {
	t.Helper()
	c, err := redis.NewClient(url, false, time.Second)
	require.NoError(t, err)
	s := redis.NewSlots(context.Background(), c, redis.Options{OpTimeout: time.Second})
	t.Cleanup(func() {
		_ = s.Close()
		_ = c.Close()
	})
	return s
}

// inUse is the slots every instance holds on worker, or -1 when Redis does not answer.
func inUse(s *redis.Slots, worker string) int {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	n, err := s.InUse(ctx, worker)
	if err != nil {
		return -1
	}
	return n
}

// redisServer is a private redis-server on a loopback port, for the outage test.
type redisServer struct {
	port int
	cmd  *exec.Cmd
	done chan struct{}
}

// startRedis starts redis-server on port (0: a free one) without persistence and waits until
// it answers. It is killed at cleanup.
func startRedis(t *testing.T, port int) *redisServer {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Skip("redis-server is not installed (.ci/run installs it)")
	}
	if port == 0 {
		port = freePort(t)
	}
	cmd := exec.Command(bin, "--bind", "127.0.0.1", "--port", strconv.Itoa(port), "--save", "", "--appendonly", "no")
	require.NoError(t, cmd.Start())
	r := &redisServer{port: port, cmd: cmd, done: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		close(r.done)
	}()
	t.Cleanup(r.kill)
	c := goredis.NewClient(&goredis.Options{Addr: r.addr()})
	defer c.Close()
	eventually(t, 5*time.Second, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		return c.Ping(ctx).Err() == nil
	}, "redis-server on %s answers", r.addr())
	return r
}

func (r *redisServer) addr() string { return fmt.Sprintf("127.0.0.1:%d", r.port) }

// URL is the redis:// URL of database 0.
func (r *redisServer) URL() string { return "redis://" + r.addr() + "/0" }

// kill SIGKILLs the server (idempotent) and waits for it to be gone.
func (r *redisServer) kill() {
	select {
	case <-r.done:
		return
	default:
	}
	_ = r.cmd.Process.Kill()
	<-r.done
}
