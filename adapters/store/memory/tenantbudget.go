package memory

import (
	"context"
	"math"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/smg-go/smg/domain/tenant"
	"github.com/smg-go/smg/ports"
)

// TenantBudgets is the in-memory ports.TenantBudgets: this replica's own buckets, the same
// token buckets as the Redis adapter (each per-minute limit refilled at limit/60 per
// second; reservation entries expire after their TTL). Used without --redis-url and while
// Redis is down.
type TenantBudgets struct {
	now func() time.Time
	mu  sync.Mutex
	m   map[string]*bucket
	seq atomic.Uint64
}

type bucket struct {
	lv      [3]float64 // requests, prompt, output charged and not yet refilled
	ts      time.Time
	entries map[string]time.Time // reservation id -> expiry
}

// NewTenantBudgets returns an empty in-memory TenantBudgets on clock now (time.Now when
// nil).
func NewTenantBudgets(now func() time.Time) *TenantBudgets {
	if now == nil {
		now = time.Now
	}
	return &TenantBudgets{now: now, m: map[string]*bucket{}}
}

func limits3(l tenant.Limits) [3]int64 {
	return [3]int64{l.RequestsPerMinute, l.PromptTokensPerMinute, l.OutputTokensPerMinute}
}

// drained returns t's bucket brought up to now (created when missing), expired entries
// dropped. Called with mu held.
func (b *TenantBudgets) drained(t tenant.Tenant, now time.Time) *bucket {
	k, ok := b.m[t.Name]
	if !ok {
		k = &bucket{ts: now, entries: map[string]time.Time{}}
		b.m[t.Name] = k
	}
	el := float64(now.Sub(k.ts).Milliseconds())
	if el < 0 {
		el = 0
	}
	lim := limits3(t.Limits)
	for i := range k.lv {
		if lim[i] > 0 {
			k.lv[i] = math.Max(0, k.lv[i]-el*float64(lim[i])/60000)
		} else {
			k.lv[i] = 0
		}
	}
	k.ts = now
	for id, exp := range k.entries {
		if !exp.After(now) {
			delete(k.entries, id)
		}
	}
	return k
}

// Reserve implements ports.TenantBudgets. It never fails.
func (b *TenantBudgets) Reserve(_ context.Context, t tenant.Tenant, est ports.TokenUse, ttl time.Duration) (ports.Reservation, *ports.BudgetDenial, error) {
	est = capEstimate(t.Limits, est)
	now := b.now()
	b.mu.Lock()
	defer b.mu.Unlock()
	k := b.drained(t, now)
	if m := t.Limits.MaxConcurrentRequests; m > 0 && int64(len(k.entries))+1 > m {
		soonest := now.Add(ttl)
		for _, exp := range k.entries {
			if exp.Before(soonest) {
				soonest = exp
			}
		}
		return ports.Reservation{}, budgetDenial(t.Limits, 3, soonest.Sub(now)), nil
	}
	lim := limits3(t.Limits)
	need := [3]float64{1, float64(est.Prompt), float64(est.Output)}
	for i := range need {
		if lim[i] > 0 && k.lv[i]+need[i] > float64(lim[i]) {
			ms := math.Ceil((k.lv[i] + need[i] - float64(lim[i])) * 60000 / float64(lim[i]))
			return ports.Reservation{}, budgetDenial(t.Limits, i, time.Duration(ms)*time.Millisecond), nil
		}
	}
	for i := range need {
		if lim[i] > 0 {
			k.lv[i] += need[i]
		}
	}
	id := "m" + strconv.FormatUint(b.seq.Add(1), 10)
	k.entries[id] = now.Add(ttl)
	return ports.Reservation{Tenant: t, ID: id, Reserved: est, TTL: ttl}, nil, nil
}

// Settle implements ports.TenantBudgets. It never fails.
func (b *TenantBudgets) Settle(_ context.Context, r ports.Reservation, used ports.TokenUse) error {
	now := b.now()
	b.mu.Lock()
	defer b.mu.Unlock()
	k := b.drained(r.Tenant, now)
	if _, held := k.entries[r.ID]; !held {
		return nil
	}
	delete(k.entries, r.ID)
	lim := limits3(r.Tenant.Limits)
	d := [3]float64{0, float64(used.Prompt - r.Reserved.Prompt), float64(used.Output - r.Reserved.Output)}
	for i := 1; i < 3; i++ {
		if lim[i] > 0 {
			k.lv[i] = math.Max(0, k.lv[i]+d[i])
		}
	}
	return nil
}

// Usage implements ports.TenantBudgets.
func (b *TenantBudgets) Usage(_ context.Context, t tenant.Tenant) (ports.BudgetUsage, error) {
	now := b.now()
	b.mu.Lock()
	defer b.mu.Unlock()
	k := b.drained(t, now)
	return ports.BudgetUsage{Requests: k.lv[0], PromptTokens: k.lv[1], OutputTokens: k.lv[2], Concurrent: int64(len(k.entries))}, nil
}

// capEstimate caps each part of est at its per-minute limit, as the Redis adapter does.
func capEstimate(l tenant.Limits, est ports.TokenUse) ports.TokenUse {
	if l.PromptTokensPerMinute > 0 && est.Prompt > l.PromptTokensPerMinute {
		est.Prompt = l.PromptTokensPerMinute
	}
	if l.OutputTokensPerMinute > 0 && est.Output > l.OutputTokensPerMinute {
		est.Output = l.OutputTokensPerMinute
	}
	return est
}

var budgetLimitNames = [...]string{"requests_per_minute", "prompt_tokens_per_minute", "output_tokens_per_minute", "max_concurrent_requests"}

// budgetDenial builds the denial for limit index i (0 requests, 1 prompt, 2 output, 3
// concurrent), retrying after at least a second.
func budgetDenial(l tenant.Limits, i int, after time.Duration) *ports.BudgetDenial {
	vals := [...]int64{l.RequestsPerMinute, l.PromptTokensPerMinute, l.OutputTokensPerMinute, l.MaxConcurrentRequests}
	if after < time.Second {
		after = time.Second
	}
	return &ports.BudgetDenial{Limit: budgetLimitNames[i], Value: vals[i], RetryAfter: after}
}

var _ ports.TenantBudgets = (*TenantBudgets)(nil)
