package store_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	goredis "github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/adapters/store"
)

// netTimeout is a net.Error that timed out, like a read deadline on a Redis connection.
type netTimeout struct{}

func (netTimeout) Error() string   { return "read tcp 127.0.0.1:1: i/o timeout" }
func (netTimeout) Timeout() bool   { return true }
func (netTimeout) Temporary() bool { return true }

// A slot claim that times out while Redis is not marked down takes nothing and reports the
// window full — it is not granted from memory, which would admit a whole window on this
// instance beside the shared one — until FailureThreshold consecutive failures mark Redis
// down; then memory serves the claims. A refused connection falls back to memory at once.
func TestFallbackSlotsDoesNotGrantATimedOutClaimFromMemory(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		err     error
		refused int // claims answered "window full" before memory takes over
	}{
		{"deadline", fmt.Errorf("redis slots: claim on w: %w", context.DeadlineExceeded), 2},
		{"network timeout", fmt.Errorf("redis slots: claim on w: %w", netTimeout{}), 2},
		{"pool timeout", fmt.Errorf("redis slots: claim on w: %w", goredis.ErrPoolTimeout), 2},
		{"connection refused", errors.New("dial tcp 127.0.0.1:1: connect: connection refused"), 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cnt := &counter{}
			f := store.NewFallbackSlots(stubSlots{err: tc.err}, memSlots(),
				store.FallbackOptions{FailureThreshold: 3, OnFallback: cnt.inc, Logger: quiet})
			ctx := context.Background()
			for i := 0; i < tc.refused; i++ {
				l, ok, err := f.Claim(ctx, "http://127.0.0.1:1", 1, 8)
				require.NoError(t, err, "claim %d", i)
				assert.False(t, ok, "claim %d: reported full, not granted", i)
				assert.Empty(t, l.ID)
				assert.False(t, f.Down(), "claim %d: below the threshold", i)
			}
			assert.Zero(t, cnt.get("slots/claim"), "a refused claim is not served by memory")
			l, ok, err := f.Claim(ctx, "http://127.0.0.1:1", 1, 8)
			require.NoError(t, err)
			assert.True(t, ok, "memory serves the claim")
			assert.Equal(t, 1, cnt.get("slots/claim"))
			require.NoError(t, f.Release(ctx, l), "released where it was taken")
			if tc.refused > 0 {
				assert.True(t, f.Down(), "the third consecutive timeout marks Redis down")
			}
		})
	}
}
