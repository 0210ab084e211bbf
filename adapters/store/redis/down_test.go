package redis_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/adapters/store/redis"
	"github.com/smg-go/smg/adapters/store/redis/redistest"
	"github.com/smg-go/smg/ports"
)

// Against a refused port and a black hole, every call returns an error (never hangs, never
// panics); Wait still works locally, bounded by its poll interval.
func TestUnavailableRedisFailsFast(t *testing.T) {
	t.Parallel()
	for name, addr := range map[string]string{
		"refused":    redistest.DeadAddr(t),
		"black hole": redistest.BlackHole(t),
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			c, err := redis.NewClient("redis://"+addr+"/0", false, 50*time.Millisecond)
			require.NoError(t, err)
			t.Cleanup(func() { _ = c.Close() })
			o := redis.Options{OpTimeout: 50 * time.Millisecond, PollInterval: 20 * time.Millisecond,
				Logger: slog.New(slog.DiscardHandler)}
			s := redis.NewSlots(context.Background(), c, o)
			t.Cleanup(func() { _ = s.Close() })
			st := redis.NewSticky(c, o)

			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			const w = "http://127.0.0.1:1"
			_, ok, err := s.Claim(ctx, w, 1, 8)
			assert.Error(t, err)
			assert.False(t, ok)
			assert.Error(t, s.Renew(ctx, ports.Lease{Worker: w, ID: "x", N: 1}))
			assert.NotErrorIs(t, s.Renew(ctx, ports.Lease{Worker: w, ID: "x", N: 1}), ports.ErrLeaseLost,
				"an unreachable store is not a lost lease")
			assert.Error(t, s.Release(ctx, ports.Lease{Worker: w, ID: "x", N: 1}))
			_, err = s.InUse(ctx, w)
			assert.Error(t, err)
			assert.NoError(t, s.Wait(ctx, w), "Wait returns at its poll interval")
			_, ok, err = st.Get(ctx, "k")
			assert.Error(t, err)
			assert.False(t, ok)
			assert.Error(t, st.Set(ctx, "k", w, time.Minute))
			assert.Error(t, st.Delete(ctx, "k"))
			assert.Error(t, redis.Ping(ctx, c, 50*time.Millisecond))
			require.NoError(t, ctx.Err(), "calls on a dead Redis must not run into the hang guard")
		})
	}
}
