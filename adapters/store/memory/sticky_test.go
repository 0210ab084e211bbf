package memory_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/adapters/store/memory"
	"github.com/smg-go/smg/adapters/store/storetest"
	"github.com/smg-go/smg/ports"
)

func TestStickyContract(t *testing.T) {
	t.Parallel()
	storetest.RunStickyStore(t, func(t *testing.T) ports.StickyStore {
		return memory.NewSticky(memory.StickyOptions{})
	})
}

func TestStickyExpiryFollowsTheClock(t *testing.T) {
	t.Parallel()
	clk := &fakeClock{t: time.Unix(1_700_000_000, 0)}
	s := memory.NewSticky(memory.StickyOptions{Now: clk.now, SweepInterval: time.Minute})
	ctx := context.Background()
	require.NoError(t, s.Set(ctx, "decode:a", "http://127.0.0.1:1", 10*time.Second))
	require.NoError(t, s.Set(ctx, "decode:b", "http://127.0.0.1:2", 10*time.Second))

	clk.t = clk.t.Add(9 * time.Second)
	_, ok, err := s.Get(ctx, "decode:a") // refreshed to 19 s
	require.NoError(t, err)
	require.True(t, ok)

	clk.t = clk.t.Add(time.Second) // 10 s: b expired, a not
	_, ok, _ = s.Get(ctx, "decode:b")
	assert.False(t, ok, "b idle for its TTL")
	_, ok, _ = s.Get(ctx, "decode:a")
	assert.True(t, ok, "a read at 9 s")

	// Keys never read again are swept by a later Set once the sweep interval passed.
	require.NoError(t, s.Set(ctx, "decode:c", "http://127.0.0.1:3", time.Second))
	clk.t = clk.t.Add(2 * time.Minute)
	require.NoError(t, s.Set(ctx, "decode:d", "http://127.0.0.1:4", time.Hour))
	assert.Equal(t, 1, s.Len(), "only d survives the sweep (a and c idle past their TTL)")
}
