package store_test

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/adapters/store"
	"github.com/smg-go/smg/adapters/store/memory"
	"github.com/smg-go/smg/adapters/store/redis"
	"github.com/smg-go/smg/adapters/store/redis/redistest"
	"github.com/smg-go/smg/adapters/store/storetest"
	"github.com/smg-go/smg/ports"
)

// quiet discards logs the tests do not look at.
var quiet = slog.New(slog.DiscardHandler)

func TestMain(m *testing.M) {
	redis.RouteLogs(quiet)
	code := m.Run()
	redistest.Stop()
	os.Exit(code)
}

// counter records OnFallback calls.
type counter struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *counter) inc(store, op string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == nil {
		c.n = map[string]int{}
	}
	c.n[store+"/"+op]++
}

func (c *counter) get(k string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[k]
}

// logBuf is a concurrency-safe log sink.
type logBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuf) count(s string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Count(l.b.String(), s)
}

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func memSlots() *memory.Slots {
	return memory.NewSlots(memory.SlotsOptions{LeaseTTL: storetest.LeaseTTL, PollInterval: storetest.PollInterval})
}

func redisSlots(t *testing.T, url, prefix string) *redis.Slots {
	t.Helper()
	c, err := redis.NewClient(url, false, 2*time.Second)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	s := redis.NewSlots(context.Background(), c, redis.Options{Prefix: prefix, OpTimeout: 2 * time.Second,
		LeaseTTL: storetest.LeaseTTL, PollInterval: storetest.PollInterval, Logger: quiet})
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func redisSticky(t *testing.T, url, prefix string) *redis.Sticky {
	t.Helper()
	c, err := redis.NewClient(url, false, 2*time.Second)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return redis.NewSticky(c, redis.Options{Prefix: prefix, OpTimeout: 2 * time.Second})
}

// The wrappers keep the port contracts with Redis up, and with Redis unreachable (served
// by memory throughout).
func TestFallbackContract(t *testing.T) {
	t.Parallel()
	for name, url := range map[string]func(t *testing.T) string{
		"redis up":   func(t *testing.T) string { return redistest.URL(t) },
		"redis down": func(t *testing.T) string { return "redis://" + redistest.DeadAddr(t) + "/0" },
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			storetest.RunSlotCounter(t, func(t *testing.T) ports.SlotCounter {
				return store.NewFallbackSlots(redisSlots(t, url(t), redistest.Prefix()), memSlots(),
					store.FallbackOptions{Logger: quiet})
			})
			storetest.RunStickyStore(t, func(t *testing.T) ports.StickyStore {
				return store.NewFallbackSticky(redisSticky(t, url(t), redistest.Prefix()),
					memory.NewSticky(memory.StickyOptions{}), store.FallbackOptions{Logger: quiet})
			})
		})
	}
}

// Redis goes away mid-run and comes back: calls fall back to memory (counted, one ERROR
// log), leases go back to the store that issued them, and after the retry interval the
// wrapper uses Redis again (one WARN log).
func TestFallbackSlotsDownAndRecovery(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	proxy := redistest.NewProxy(t)
	prefix := redistest.Prefix()
	direct := redisSlots(t, redistest.URL(t), prefix) // an observer that is never cut off
	clk := &clock{t: time.Unix(1_700_000_000, 0)}
	logs, cnt := &logBuf{}, &counter{}
	mem := memSlots()
	f := store.NewFallbackSlots(redisSlots(t, proxy.URL(), prefix), mem, store.FallbackOptions{
		RetryInterval: time.Second, FailureThreshold: 1, Now: clk.now, OnFallback: cnt.inc,
		Logger: slog.New(slog.NewTextHandler(logs, nil)),
	})
	const w = "http://127.0.0.1:1/decode"
	inUse := func(s ports.SlotCounter) int {
		n, err := s.InUse(ctx, w)
		require.NoError(t, err)
		return n
	}

	shared, ok, err := f.Claim(ctx, w, 1, 4)
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, 1, inUse(direct), "with Redis up the lease is in Redis")
	assert.False(t, f.Down())

	proxy.Cut()
	local, ok, err := f.Claim(ctx, w, 2, 4)
	require.NoError(t, err, "a claim during the outage is served by memory")
	require.True(t, ok)
	assert.True(t, f.Down())
	assert.Equal(t, 2, inUse(mem), "the fallback lease is in memory")
	_, ok, err = f.Claim(ctx, w, 3, 4)
	require.NoError(t, err)
	assert.False(t, ok, "memory enforces the window during the outage")
	require.NoError(t, f.Release(ctx, shared), "a Redis lease released during the outage is left to expire")
	require.NoError(t, f.Renew(ctx, local))
	assert.Equal(t, 2, inUse(f))
	assert.Equal(t, 2, cnt.get("slots/claim"))
	assert.Equal(t, 1, cnt.get("slots/in_use"))
	assert.Equal(t, 1, logs.count("Redis unavailable"), "one ERROR per transition, not per call")

	proxy.Restore()
	still, ok, err := f.Claim(ctx, w, 1, 4)
	require.NoError(t, err)
	require.True(t, ok)
	assert.True(t, f.Down(), "no probe before the retry interval")
	assert.Equal(t, 3, cnt.get("slots/claim"))

	clk.add(time.Second)
	var back ports.Lease
	require.Eventually(t, func() bool { // the pool may hold a cut connection: retry the probe
		clk.add(time.Second)
		l, ok, err := f.Claim(ctx, w, 1, 4)
		if err == nil && ok && !f.Down() {
			back = l
			return true
		}
		if ok {
			_ = f.Release(ctx, l)
		}
		return false
	}, 10*time.Second, 10*time.Millisecond)
	assert.Equal(t, 2, inUse(direct), "after recovery the lease is in Redis again (with the one never released)")
	assert.Equal(t, 1, logs.count("Redis recovered"))
	require.NoError(t, f.Release(ctx, back))
	require.NoError(t, f.Release(ctx, local))
	require.NoError(t, f.Release(ctx, still))
	assert.Zero(t, inUse(mem), "the fallback leases went back to memory")
	assert.Equal(t, 1, inUse(direct))
}

// With Redis up, pins are written through to memory, so an outage keeps them.
func TestFallbackStickyKeepsPinsThroughAnOutage(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	proxy := redistest.NewProxy(t)
	clk := &clock{t: time.Unix(1_700_000_000, 0)}
	logs, cnt := &logBuf{}, &counter{}
	f := store.NewFallbackSticky(redisSticky(t, proxy.URL(), redistest.Prefix()),
		memory.NewSticky(memory.StickyOptions{}), store.FallbackOptions{
			FailureThreshold: 1, Now: clk.now, OnFallback: cnt.inc, Logger: slog.New(slog.NewTextHandler(logs, nil)),
		})
	require.NoError(t, f.Set(ctx, "decode:a", "http://127.0.0.1:1", time.Hour))
	proxy.Cut()
	got, ok, err := f.Get(ctx, "decode:a")
	require.NoError(t, err)
	assert.True(t, ok)
	assert.Equal(t, "http://127.0.0.1:1", got)
	require.NoError(t, f.Set(ctx, "decode:b", "http://127.0.0.1:2", time.Hour))
	require.NoError(t, f.Delete(ctx, "decode:a"))
	_, ok, err = f.Get(ctx, "decode:a")
	require.NoError(t, err)
	assert.False(t, ok)
	assert.Equal(t, 2, cnt.get("sticky/get"))
	assert.Equal(t, 1, cnt.get("sticky/set"))
	assert.Equal(t, 1, cnt.get("sticky/delete"))
	assert.Equal(t, 1, logs.count("Redis unavailable"))
	assert.True(t, f.Down())
}

// stubSlots fails every call with err.
type stubSlots struct{ err error }

func (s stubSlots) Claim(context.Context, string, int, int) (ports.Lease, bool, error) {
	return ports.Lease{}, false, s.err
}
func (s stubSlots) Renew(context.Context, ports.Lease) error   { return s.err }
func (s stubSlots) Release(context.Context, ports.Lease) error { return s.err }
func (s stubSlots) InUse(context.Context, string) (int, error) { return 0, s.err }
func (s stubSlots) Wait(ctx context.Context, _ string) error   { return ctx.Err() }

// A caller whose context ended says nothing about Redis: the error is returned, Redis is
// not marked down and nothing is counted.
func TestFallbackIgnoresTheCallersCancellation(t *testing.T) {
	t.Parallel()
	cnt := &counter{}
	f := store.NewFallbackSlots(stubSlots{err: context.Canceled}, memSlots(), store.FallbackOptions{OnFallback: cnt.inc})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, ok, err := f.Claim(ctx, "http://127.0.0.1:1", 1, 1)
	assert.ErrorIs(t, err, context.Canceled)
	assert.False(t, ok)
	assert.False(t, f.Down())
	assert.Zero(t, cnt.get("slots/claim"))
}

// A lost lease is an answer from Redis, not an outage.
func TestFallbackPassesLeaseLostThrough(t *testing.T) {
	t.Parallel()
	f := store.NewFallbackSlots(stubSlots{err: ports.ErrLeaseLost}, memSlots(), store.FallbackOptions{})
	assert.ErrorIs(t, f.Renew(context.Background(), ports.Lease{Worker: "http://127.0.0.1:1", ID: "x", N: 1}), ports.ErrLeaseLost)
	assert.False(t, f.Down())
}

// A lone failed call is served by memory without switching; FailureThreshold consecutive
// failures switch, and a success in between resets the count.
func TestFallbackSwitchesAfterConsecutiveFailures(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	proxy := redistest.NewProxy(t)
	logs, cnt := &logBuf{}, &counter{}
	f := store.NewFallbackSticky(redisSticky(t, proxy.URL(), redistest.Prefix()),
		memory.NewSticky(memory.StickyOptions{}), store.FallbackOptions{
			FailureThreshold: 3, OnFallback: cnt.inc, Logger: slog.New(slog.NewTextHandler(logs, nil)),
		})
	proxy.Cut()
	for i := 0; i < 2; i++ {
		_, _, err := f.Get(ctx, "decode:a")
		require.NoError(t, err)
	}
	assert.False(t, f.Down(), "two failures are below the threshold")
	assert.Equal(t, 2, cnt.get("sticky/get"), "each failed call is served by memory and counted")
	proxy.Restore()
	require.Eventually(t, func() bool { // until a call is served by Redis again
		before := cnt.get("sticky/get")
		_, _, err := f.Get(ctx, "decode:a")
		return err == nil && cnt.get("sticky/get") == before && !f.Down()
	}, 10*time.Second, 10*time.Millisecond)
	base := cnt.get("sticky/get")
	proxy.Cut()
	for i := 0; i < 2; i++ {
		_, _, _ = f.Get(ctx, "decode:a")
	}
	assert.False(t, f.Down(), "a success reset the count")
	_, _, _ = f.Get(ctx, "decode:a")
	assert.True(t, f.Down(), "the third consecutive failure switches")
	assert.Equal(t, base+3, cnt.get("sticky/get"))
	assert.Equal(t, 1, logs.count("Redis unavailable"))
}
