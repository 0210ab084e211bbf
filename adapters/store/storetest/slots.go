package storetest

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/ports"
)

// RunSlotCounter runs the SlotCounter contract. mk returns a new counter on a namespace of
// its own (nothing claimed), configured with LeaseTTL and PollInterval; the suite calls it
// once per subtest and runs subtests in parallel.
func RunSlotCounter(t *testing.T, mk func(t *testing.T) ports.SlotCounter) {
	t.Run("window respected under concurrent claims", func(t *testing.T) {
		t.Parallel()
		testConcurrentWindow(t, mk(t))
	})
	t.Run("claim of n slots is all or nothing", func(t *testing.T) {
		t.Parallel()
		testAllOrNothing(t, mk(t))
	})
	t.Run("invalid claims fail", func(t *testing.T) {
		t.Parallel()
		sc, ctx := mk(t), guard(t)
		w := Key("http://127.0.0.1:1/bad")
		for _, c := range []struct{ n, window int }{{0, 8}, {-1, 8}, {1, 0}, {1, -3}} {
			_, ok, err := sc.Claim(ctx, w, c.n, c.window)
			assert.Error(t, err, "n=%d window=%d", c.n, c.window)
			assert.False(t, ok)
		}
		used, err := sc.InUse(ctx, w)
		require.NoError(t, err)
		assert.Zero(t, used)
	})
	t.Run("release is idempotent", func(t *testing.T) {
		t.Parallel()
		testReleaseIdempotent(t, mk(t))
	})
	t.Run("workers are isolated", func(t *testing.T) {
		t.Parallel()
		sc, ctx := mk(t), guard(t)
		a, b := Key("http://127.0.0.1:1/a"), Key("http://127.0.0.1:1/b")
		la, ok, err := sc.Claim(ctx, a, 2, 2)
		require.NoError(t, err)
		require.True(t, ok)
		_, ok, err = sc.Claim(ctx, b, 2, 2)
		require.NoError(t, err)
		assert.True(t, ok, "a full window on one worker must not gate another")
		require.NoError(t, sc.Release(ctx, la))
		ua, err := sc.InUse(ctx, a)
		require.NoError(t, err)
		ub, err := sc.InUse(ctx, b)
		require.NoError(t, err)
		assert.Equal(t, []int{0, 2}, []int{ua, ub})
	})
	t.Run("abandoned lease expires", func(t *testing.T) {
		t.Parallel()
		testLeaseExpiry(t, mk(t))
	})
	t.Run("renewed lease is kept", func(t *testing.T) {
		t.Parallel()
		testRenewKeeps(t, mk(t))
	})
	t.Run("wait wakes on release", func(t *testing.T) {
		t.Parallel()
		testWaitWakes(t, mk(t))
	})
	t.Run("wait returns the context error", func(t *testing.T) {
		t.Parallel()
		sc := mk(t)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		assert.ErrorIs(t, sc.Wait(ctx, Key("http://127.0.0.1:1/w")), context.Canceled)
		ctx, cancel = context.WithTimeout(context.Background(), 20*time.Millisecond)
		defer cancel()
		assert.ErrorIs(t, sc.Wait(ctx, Key("http://127.0.0.1:1/w")), context.DeadlineExceeded)
	})
}

// testConcurrentWindow: 64 goroutines x 8 claims each on a window of 8. The number held at
// once (as the holders count it, between a successful Claim and its Release) never exceeds
// 8, and every goroutine gets its claims without relying on the poll interval.
func testConcurrentWindow(t *testing.T, sc ports.SlotCounter) {
	const goroutines, rounds, window = 64, 8, 8
	ctx := guard(t)
	w := Key("http://127.0.0.1:1/decode")
	var held, maxHeld, claims atomic.Int64
	var wg sync.WaitGroup
	for g := 0; g < goroutines; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := 0; r < rounds; r++ {
				var l ports.Lease
				for {
					var ok bool
					var err error
					l, ok, err = sc.Claim(ctx, w, 1, window)
					if !assert.NoError(t, err) {
						return
					}
					if ok {
						break
					}
					if !assert.NoError(t, sc.Wait(ctx, w), "waiter starved: a wake-up was lost") {
						return
					}
				}
				h := held.Add(1)
				for m := maxHeld.Load(); h > m && !maxHeld.CompareAndSwap(m, h); m = maxHeld.Load() {
				}
				claims.Add(1)
				time.Sleep(time.Duration(r%3) * time.Millisecond)
				held.Add(-1)
				if !assert.NoError(t, sc.Release(ctx, l)) {
					return
				}
			}
		}()
	}
	wg.Wait()
	assert.LessOrEqual(t, maxHeld.Load(), int64(window), "more slots held than the window")
	assert.Equal(t, int64(goroutines*rounds), claims.Load())
	used, err := sc.InUse(ctx, w)
	require.NoError(t, err)
	assert.Zero(t, used, "every slot released")
}

func testAllOrNothing(t *testing.T, sc ports.SlotCounter) {
	ctx := guard(t)
	w := Key("http://127.0.0.1:1/decode")
	l1, ok, err := sc.Claim(ctx, w, 2, 3)
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, ports.Lease{Worker: w, ID: l1.ID, N: 2, TTL: LeaseTTL}, l1)
	_, ok, err = sc.Claim(ctx, w, 2, 3)
	require.NoError(t, err)
	assert.False(t, ok, "2 more slots do not fit in 3 with 2 held")
	used, err := sc.InUse(ctx, w)
	require.NoError(t, err)
	assert.Equal(t, 2, used, "a refused claim takes nothing")
	l2, ok, err := sc.Claim(ctx, w, 1, 3)
	require.NoError(t, err)
	require.True(t, ok)
	assert.NotEqual(t, l1.ID, l2.ID)
	_, ok, err = sc.Claim(ctx, w, 4, 3)
	require.NoError(t, err)
	assert.False(t, ok, "n above the window never fits")
	require.NoError(t, sc.Release(ctx, l1))
	used, err = sc.InUse(ctx, w)
	require.NoError(t, err)
	assert.Equal(t, 1, used, "release returns all n slots")
}

func testReleaseIdempotent(t *testing.T, sc ports.SlotCounter) {
	ctx := guard(t)
	w := Key("http://127.0.0.1:1/decode")
	l1, ok, err := sc.Claim(ctx, w, 1, 2)
	require.NoError(t, err)
	require.True(t, ok)
	l2, ok, err := sc.Claim(ctx, w, 1, 2)
	require.NoError(t, err)
	require.True(t, ok)
	for i := 0; i < 3; i++ {
		require.NoError(t, sc.Release(ctx, l1))
	}
	used, err := sc.InUse(ctx, w)
	require.NoError(t, err)
	assert.Equal(t, 1, used, "a repeated release must not free another holder's slot")
	require.NoError(t, sc.Release(ctx, ports.Lease{Worker: w, ID: "never-claimed", N: 1, TTL: LeaseTTL}))
	require.NoError(t, sc.Release(ctx, ports.Lease{}))
	used, err = sc.InUse(ctx, w)
	require.NoError(t, err)
	assert.Equal(t, 1, used)
	require.NoError(t, sc.Release(ctx, l2))
	assert.ErrorIs(t, sc.Renew(ctx, l2), ports.ErrLeaseLost, "a released lease cannot be renewed")
}

// testLeaseExpiry: a holder that stops renewing (a crashed instance) loses its slots within
// LeaseTTL; its late Renew reports the loss and its late Release frees nothing.
func testLeaseExpiry(t *testing.T, sc ports.SlotCounter) {
	ctx := guard(t)
	w := Key("http://127.0.0.1:1/decode")
	old, ok, err := sc.Claim(ctx, w, 1, 1)
	require.NoError(t, err)
	require.True(t, ok)
	_, ok, err = sc.Claim(ctx, w, 1, 1)
	require.NoError(t, err)
	require.False(t, ok, "window of 1 is full")
	var fresh ports.Lease
	for !ok {
		wctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
		_ = sc.Wait(wctx, w)
		cancel()
		require.NoError(t, ctx.Err(), "abandoned lease never expired")
		fresh, ok, err = sc.Claim(ctx, w, 1, 1)
		require.NoError(t, err)
	}
	assert.ErrorIs(t, sc.Renew(ctx, old), ports.ErrLeaseLost)
	require.NoError(t, sc.Release(ctx, old))
	used, err := sc.InUse(ctx, w)
	require.NoError(t, err)
	assert.Equal(t, 1, used, "releasing the expired lease must not free the new holder's slot")
	require.NoError(t, sc.Renew(ctx, fresh))
}

// testRenewKeeps renews every TTL/4 for 2 TTLs; the full window stays full throughout.
func testRenewKeeps(t *testing.T, sc ports.SlotCounter) {
	ctx := guard(t)
	w := Key("http://127.0.0.1:1/decode")
	l, ok, err := sc.Claim(ctx, w, 1, 1)
	require.NoError(t, err)
	require.True(t, ok)
	for i := 0; i < 8; i++ {
		time.Sleep(l.TTL / 4)
		require.NoError(t, sc.Renew(ctx, l), "renewal %d", i)
		_, ok, err = sc.Claim(ctx, w, 1, 1)
		require.NoError(t, err)
		require.False(t, ok, "renewed lease was dropped after %d renewals", i+1)
	}
	require.NoError(t, sc.Release(ctx, l))
	used, err := sc.InUse(ctx, w)
	require.NoError(t, err)
	assert.Zero(t, used)
}

// testWaitWakes: waiters blocked on a full window return when the holder releases, well
// before the (one-minute) poll interval; a release nobody waited for lets the next Wait
// through at once.
func testWaitWakes(t *testing.T, sc ports.SlotCounter) {
	ctx := guard(t)
	w := Key("http://127.0.0.1:1/decode")
	l, ok, err := sc.Claim(ctx, w, 1, 1)
	require.NoError(t, err)
	require.True(t, ok)
	woke := make(chan error, 1)
	go func() { woke <- sc.Wait(ctx, w) }()
	require.NoError(t, sc.Release(ctx, l))
	select {
	case err := <-woke:
		require.NoError(t, err, "Wait ran into the hang guard: release did not wake it")
	case <-ctx.Done():
		t.Fatal("Wait did not return after the release")
	}
	l, ok, err = sc.Claim(ctx, w, 1, 1)
	require.NoError(t, err)
	require.True(t, ok, "the freed slot is claimable")

	// Released before anyone waits: the next Wait must not block.
	require.NoError(t, sc.Release(ctx, l))
	require.NoError(t, sc.Wait(ctx, w), "a release nobody waited for was lost")
}
