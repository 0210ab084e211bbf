package redis_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/adapters/store/redis"
	"github.com/smg-go/smg/domain/tenant"
	"github.com/smg-go/smg/ports"
)

// Three replicas (three clients, as three gateways hold) reserve for one tenant under 200
// concurrent requests: the output tokens admitted stay within the budget plus what the
// bucket refilled during the burst plus one request's estimate.
func TestTenantBudgetHoldsAcrossReplicas(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, b backend) {
		_, prefix := b.client(t)
		var replicas []*redis.TenantBudgets
		for range 3 {
			c, _ := b.client(t)
			replicas = append(replicas, redis.NewTenantBudgets(c, redis.Options{Prefix: prefix, OpTimeout: 10 * time.Second}))
		}
		tn := tenant.Tenant{Name: "batch", Limits: tenant.Limits{OutputTokensPerMinute: 20000, PromptTokensPerMinute: 1_000_000}}
		const est = 1000
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		var admitted, denied atomic.Int64
		var wg sync.WaitGroup
		start := time.Now()
		for i := range 200 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, d, err := replicas[i%3].Reserve(ctx, tn, ports.TokenUse{Prompt: 50, Output: est}, time.Minute)
				if !assert.NoError(t, err) {
					return
				}
				if d == nil {
					admitted.Add(1)
					return
				}
				denied.Add(1)
				assert.Equal(t, "output_tokens_per_minute", d.Limit)
				assert.Equal(t, int64(20000), d.Value)
				assert.GreaterOrEqual(t, d.RetryAfter, time.Second)
			}()
		}
		wg.Wait()
		elapsed := time.Since(start)
		refill := float64(20000) * elapsed.Seconds() / 60
		got := float64(admitted.Load() * est)
		t.Logf("%s: admitted %d, denied %d in %s", b.name, admitted.Load(), denied.Load(), elapsed)
		assert.LessOrEqual(t, got, 20000+refill+est, "the budget held across replicas")
		assert.GreaterOrEqual(t, got, float64(20000-est), "the budget was used, not lost")
		assert.Equal(t, int64(200), admitted.Load()+denied.Load())
	})
}

// Settle replaces the estimate by the real use: a request that used 10 of 1000 reserved
// output tokens frees 990, and its concurrency entry.
func TestTenantBudgetSettleCorrectsTheEstimate(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, b backend) {
		c, prefix := b.client(t)
		bud := redis.NewTenantBudgets(c, redis.Options{Prefix: prefix, OpTimeout: 2 * time.Second})
		// A slow refill (1000/min: 16.7 tokens/s) so the figures below are exact to a few.
		tn := tenant.Tenant{Name: "t1", Limits: tenant.Limits{OutputTokensPerMinute: 1000, MaxConcurrentRequests: 5}}
		ctx := context.Background()
		r, d, err := bud.Reserve(ctx, tn, ports.TokenUse{Prompt: 20, Output: 1000}, time.Minute)
		require.NoError(t, err)
		require.Nil(t, d)
		_, d, err = bud.Reserve(ctx, tn, ports.TokenUse{Prompt: 20, Output: 500}, time.Minute)
		require.NoError(t, err)
		require.NotNil(t, d, "the bucket is full")
		require.NoError(t, bud.Settle(ctx, r, ports.TokenUse{Prompt: 20, Output: 10}))
		u, err := bud.Usage(ctx, tn)
		require.NoError(t, err)
		assert.InDelta(t, 0, u.OutputTokens, 10, "990 of the 1000 reserved freed (10 used, refilled within the test)")
		assert.Equal(t, int64(0), u.Concurrent)
		require.NoError(t, bud.Settle(ctx, r, ports.TokenUse{Output: 0}), "settling twice")
		u2, err := bud.Usage(ctx, tn)
		require.NoError(t, err)
		assert.InDelta(t, u.OutputTokens, u2.OutputTokens, 5, "a second settle frees nothing more")
		_, d, err = bud.Reserve(ctx, tn, ports.TokenUse{Output: 900}, time.Minute)
		require.NoError(t, err)
		assert.Nil(t, d, "the freed tokens admit the next request")
	})
}

// A replica killed mid-request never settles: its concurrency entry blocks the tenant's
// last slot until its TTL passes, and no longer.
func TestTenantBudgetKilledReplicaLeaksNothingPastItsTTL(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, b backend) {
		c, prefix := b.client(t)
		dead := redis.NewTenantBudgets(c, redis.Options{Prefix: prefix, OpTimeout: 2 * time.Second})
		c2, _ := b.client(t)
		live := redis.NewTenantBudgets(c2, redis.Options{Prefix: prefix, OpTimeout: 2 * time.Second})
		tn := tenant.Tenant{Name: "solo", Limits: tenant.Limits{MaxConcurrentRequests: 1}}
		ctx := context.Background()
		_, d, err := dead.Reserve(ctx, tn, ports.TokenUse{Output: 10}, 700*time.Millisecond)
		require.NoError(t, err)
		require.Nil(t, d)
		_, d, err = live.Reserve(ctx, tn, ports.TokenUse{Output: 10}, time.Minute)
		require.NoError(t, err)
		require.NotNil(t, d)
		assert.Equal(t, "max_concurrent_requests", d.Limit)
		require.Eventually(t, func() bool {
			_, d, err := live.Reserve(ctx, tn, ports.TokenUse{Output: 10}, time.Minute)
			return err == nil && d == nil
		}, 5*time.Second, 50*time.Millisecond, "the dead replica's entry expired with its TTL")
	})
}
