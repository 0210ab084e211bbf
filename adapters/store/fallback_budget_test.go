package store_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/adapters/store"
	"github.com/smg-go/smg/adapters/store/memory"
	"github.com/smg-go/smg/adapters/store/redis"
	"github.com/smg-go/smg/adapters/store/redis/redistest"
	"github.com/smg-go/smg/domain/tenant"
	"github.com/smg-go/smg/ports"
)

func redisBudgets(t *testing.T, url, prefix string) *redis.TenantBudgets {
	t.Helper()
	c, err := redis.NewClient(url, false, 2*time.Second)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return redis.NewTenantBudgets(c, redis.Options{Prefix: prefix, OpTimeout: 2 * time.Second})
}

// Redis goes away mid-run and comes back: budgets fall back to this replica's own buckets
// (every limit still enforced, per replica; counted; one ERROR log), a reservation taken in
// Redis settles without error while it is away (its entry expires there), and after the
// retry interval the shared buckets are used again (one WARN log).
func TestFallbackBudgetsDownAndRecovery(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	proxy := redistest.NewProxy(t)
	prefix := redistest.Prefix()
	// The proxy speaks to the test Redis's database: so does the observer. The keys expire
	// on their own within a minute.
	direct := redisBudgets(t, redistest.URL(t), prefix)
	clk := &clock{t: time.Unix(1_700_000_000, 0)}
	logs, cnt := &logBuf{}, &counter{}
	f := store.NewFallbackBudgets(redisBudgets(t, proxy.URL(), prefix), memory.NewTenantBudgets(nil), store.FallbackOptions{
		RetryInterval: time.Second, FailureThreshold: 1, Now: clk.now, OnFallback: cnt.inc,
		Logger: slog.New(slog.NewTextHandler(logs, nil)),
	})
	tn := tenant.Tenant{Name: "t", Limits: tenant.Limits{RequestsPerMinute: 2, MaxConcurrentRequests: 5}}
	reserve := func() (ports.Reservation, *ports.BudgetDenial) {
		r, d, err := f.Reserve(ctx, tn, ports.TokenUse{Prompt: 1, Output: 1}, time.Minute)
		require.NoError(t, err)
		return r, d
	}

	shared, d := reserve()
	require.Nil(t, d)
	u, err := direct.Usage(ctx, tn)
	require.NoError(t, err)
	assert.Equal(t, int64(1), u.Concurrent, "with Redis up the reservation is in Redis")

	proxy.Cut()
	local, d := reserve()
	require.Nil(t, d, "served by memory")
	assert.True(t, f.Down())
	_, d = reserve()
	require.Nil(t, d)
	_, d = reserve()
	require.NotNil(t, d, "memory enforces the limit too: 2 requests per minute on this replica")
	assert.Equal(t, "requests_per_minute", d.Limit)
	require.NoError(t, f.Settle(ctx, shared, ports.TokenUse{}), "a Redis reservation while Redis is away: no error")
	require.NoError(t, f.Settle(ctx, local, ports.TokenUse{}))
	assert.Equal(t, 1, logs.count("Redis unavailable"))
	assert.Positive(t, cnt.get("tenant_budgets/reserve"))

	proxy.Restore()
	clk.add(2 * time.Second)
	require.Eventually(t, func() bool {
		_, _, err := f.Reserve(ctx, tn, ports.TokenUse{}, time.Minute)
		return err == nil && !f.Down()
	}, 10*time.Second, 20*time.Millisecond, "back on Redis")
	assert.Equal(t, 1, logs.count("Redis recovered"))
	u, err = direct.Usage(ctx, tn)
	require.NoError(t, err)
	assert.Equal(t, int64(2), u.Concurrent, "the shared entry still held (never settled in Redis) and the new one")
}
