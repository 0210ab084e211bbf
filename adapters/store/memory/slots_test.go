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

func TestSlotsContract(t *testing.T) {
	t.Parallel()
	storetest.RunSlotCounter(t, func(t *testing.T) ports.SlotCounter {
		return memory.NewSlots(memory.SlotsOptions{LeaseTTL: storetest.LeaseTTL, PollInterval: storetest.PollInterval})
	})
}

// fakeClock is a manually advanced clock.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time { return c.t }

func TestSlotsLeaseExpiryFollowsTheClock(t *testing.T) {
	t.Parallel()
	clk := &fakeClock{t: time.Unix(1_700_000_000, 0)}
	s := memory.NewSlots(memory.SlotsOptions{LeaseTTL: 10 * time.Second, Now: clk.now})
	ctx := context.Background()
	const w = "http://127.0.0.1:9/decode"

	l, ok, err := s.Claim(ctx, w, 3, 4)
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, 10*time.Second, l.TTL)

	clk.t = clk.t.Add(9 * time.Second)
	require.NoError(t, s.Renew(ctx, l)) // now expires at 19 s
	clk.t = clk.t.Add(9 * time.Second)
	used, err := s.InUse(ctx, w)
	require.NoError(t, err)
	assert.Equal(t, 3, used, "renewed at 9 s, still held at 18 s")

	clk.t = clk.t.Add(time.Second) // 19 s: expiry instant
	used, err = s.InUse(ctx, w)
	require.NoError(t, err)
	assert.Zero(t, used, "lease expires exactly TTL after the last renewal")
	assert.ErrorIs(t, s.Renew(ctx, l), ports.ErrLeaseLost)
}

func TestSlotsDefaultLeaseTTL(t *testing.T) {
	t.Parallel()
	s := memory.NewSlots(memory.SlotsOptions{})
	l, ok, err := s.Claim(context.Background(), "http://127.0.0.1:9", 1, 1)
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, memory.DefaultLeaseTTL, l.TTL)
	assert.Equal(t, 10*time.Second, memory.DefaultLeaseTTL)
}
