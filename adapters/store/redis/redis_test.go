package redis_test

import (
	"context"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/adapters/store/redis"
	"github.com/smg-go/smg/adapters/store/redis/redistest"
	"github.com/smg-go/smg/adapters/store/storetest"
	"github.com/smg-go/smg/ports"
)

func TestMain(m *testing.M) {
	redis.RouteLogs(slog.New(slog.DiscardHandler))
	code := m.Run()
	redistest.Stop()
	os.Exit(code)
}

// newSlots returns a Redis SlotCounter with the suite's lease TTL and poll interval on a
// random prefix (or on prefix, when given, to share it with another instance).
func newSlots(t *testing.T, b backend, prefix string) *redis.Slots {
	t.Helper()
	c, p := b.client(t)
	if prefix != "" {
		p = prefix
	}
	s := redis.NewSlots(context.Background(), c, redis.Options{Prefix: p,
		LeaseTTL: storetest.LeaseTTL, PollInterval: storetest.PollInterval, OpTimeout: 2 * time.Second})
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func TestSlotsContract(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, b backend) {
		storetest.RunSlotCounter(t, func(t *testing.T) ports.SlotCounter { return newSlots(t, b, "") })
	})
}

func TestStickyContract(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, b backend) {
		storetest.RunStickyStore(t, func(t *testing.T) ports.StickyStore {
			c, p := b.client(t)
			return redis.NewSticky(c, redis.Options{Prefix: p, OpTimeout: 2 * time.Second})
		})
	})
}

// Two instances on one Redis and prefix share a window: what one holds, the other sees,
// and a release by one wakes a waiter on the other.
func TestSlotsSharedBetweenInstances(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, b backend) {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		_, prefix := b.client(t)
		a, bb := newSlots(t, b, prefix), newSlots(t, b, prefix)
		const w = "http://127.0.0.1:1/decode"

		la, ok, err := a.Claim(ctx, w, 2, 3)
		require.NoError(t, err)
		require.True(t, ok)
		lb, ok, err := bb.Claim(ctx, w, 1, 3)
		require.NoError(t, err)
		require.True(t, ok)
		_, ok, err = bb.Claim(ctx, w, 1, 3)
		require.NoError(t, err)
		assert.False(t, ok, "instance b sees a's two slots")
		used, err := bb.InUse(ctx, w)
		require.NoError(t, err)
		assert.Equal(t, 3, used)

		woke := make(chan error, 1)
		go func() { woke <- bb.Wait(ctx, w) }()
		require.NoError(t, a.Release(ctx, la))
		require.NoError(t, <-woke, "b's waiter must wake on a's release, not on the 1-minute poll")
		require.NoError(t, bb.Release(ctx, lb))
		used, err = a.InUse(ctx, w)
		require.NoError(t, err)
		assert.Zero(t, used)
	})
}

// An instance that dies holding slots (Close without Release: no renewals, no release)
// gives them back within the lease TTL.
func TestSlotsOfAStoppedInstanceReturn(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, b backend) {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		_, prefix := b.client(t)
		dead, live := newSlots(t, b, prefix), newSlots(t, b, prefix)
		const w = "http://127.0.0.1:1/decode"
		for i := 0; i < 4; i++ {
			_, ok, err := dead.Claim(ctx, w, 1, 4)
			require.NoError(t, err)
			require.True(t, ok)
		}
		require.NoError(t, dead.Close())
		got := 0
		for got < 4 {
			wctx, wcancel := context.WithTimeout(ctx, 50*time.Millisecond)
			_ = live.Wait(wctx, w)
			wcancel()
			require.NoError(t, ctx.Err(), "slots of the stopped instance never came back")
			_, ok, err := live.Claim(ctx, w, 1, 4)
			require.NoError(t, err)
			if ok {
				got++
			}
		}
		used, err := live.InUse(ctx, w)
		require.NoError(t, err)
		assert.Equal(t, 4, used)
	})
}

// Keys carry the configured prefix, so instances with other prefixes are not affected.
func TestPrefixesAreIsolated(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		a, bb := newSlots(t, b, ""), newSlots(t, b, "")
		_, ok, err := a.Claim(ctx, "http://127.0.0.1:1", 1, 1)
		require.NoError(t, err)
		require.True(t, ok)
		_, ok, err = bb.Claim(ctx, "http://127.0.0.1:1", 1, 1)
		require.NoError(t, err)
		assert.True(t, ok)
	})
}

func TestNewClientRejectsBadURL(t *testing.T) {
	t.Parallel()
	for _, u := range []string{"http://127.0.0.1:6379", "redis://127.0.0.1:6379/notadb", "::"} {
		_, err := redis.NewClient(u, false, 0)
		assert.Error(t, err, u)
	}
}
