package store

import (
	"context"
	"strings"
	"time"

	"github.com/smg-go/smg/domain/tenant"
	"github.com/smg-go/smg/ports"
)

// FallbackBudgets is a ports.TenantBudgets that keeps the tenants' budgets in Primary
// (Redis, shared by every replica) while it answers and in Secondary (memory, this
// replica's own) while it does not: during an outage each replica enforces every limit on
// its own (a fleet of N replicas admits up to N times a tenant's budget), with one ERROR
// when Redis is marked down and one WARN when it recovers (see the package doc).
// Reservations go back to the store that took them.
type FallbackBudgets struct {
	primary, secondary ports.TenantBudgets
	h                  *health
}

// NewFallbackBudgets wraps primary (Redis) with secondary (memory) as the fallback.
func NewFallbackBudgets(primary, secondary ports.TenantBudgets, o FallbackOptions) *FallbackBudgets {
	return &FallbackBudgets{primary: primary, secondary: secondary, h: newHealth("tenant_budgets", o)}
}

// Down reports whether Redis is currently marked down.
func (f *FallbackBudgets) Down() bool { return f.h.Down() }

// Reserve reserves in Redis, or in memory when Redis is down or fails.
func (f *FallbackBudgets) Reserve(ctx context.Context, t tenant.Tenant, est ports.TokenUse, ttl time.Duration) (ports.Reservation, *ports.BudgetDenial, error) {
	if f.h.usePrimary() {
		r, d, err := f.primary.Reserve(ctx, t, est, ttl)
		if err == nil {
			f.h.ok()
			return r, d, nil
		}
		if !f.h.failed(ctx, "reserve", err) {
			return r, d, err
		}
	}
	f.h.fellBack("reserve")
	r, d, err := f.secondary.Reserve(ctx, t, est, ttl)
	if d == nil && err == nil {
		r.ID = localID + r.ID
	}
	return r, d, err
}

// Settle settles where the reservation was taken. A Redis reservation that cannot be
// settled because Redis is down returns nil: its entry expires there within its TTL.
func (f *FallbackBudgets) Settle(ctx context.Context, r ports.Reservation, used ports.TokenUse) error {
	if id, ok := strings.CutPrefix(r.ID, localID); ok {
		r.ID = id
		return f.secondary.Settle(ctx, r, used)
	}
	if r.ID == "" {
		return nil
	}
	if !f.h.usePrimary() {
		f.h.fellBack("settle")
		return nil
	}
	err := f.primary.Settle(ctx, r, used)
	if err == nil {
		f.h.ok()
		return nil
	}
	if !f.h.failed(ctx, "settle", err) {
		return err
	}
	f.h.fellBack("settle")
	return nil
}

// Usage reads Redis, or memory when Redis is down or fails.
func (f *FallbackBudgets) Usage(ctx context.Context, t tenant.Tenant) (ports.BudgetUsage, error) {
	if f.h.usePrimary() {
		u, err := f.primary.Usage(ctx, t)
		if err == nil {
			f.h.ok()
			return u, nil
		}
		if !f.h.failed(ctx, "usage", err) {
			return u, err
		}
	}
	f.h.fellBack("usage")
	return f.secondary.Usage(ctx, t)
}

var _ ports.TenantBudgets = (*FallbackBudgets)(nil)
