// Package tenantbudget enforces the tenants' budgets at admission: it reserves a request's
// estimated tokens (the prompt; the output from max_tokens) against its tenant's limits
// before any leg runs, answers 429 tenant_rate_limited with Retry-After when a limit would
// be passed, and settles the reservation with the tokens the response really used when the
// request ends (streams, errors and cancelled requests included). The buckets live in
// ports.TenantBudgets: Redis shared by every replica, or this replica's memory.
package tenantbudget

import (
	"context"
	"log/slog"
	"math"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/smg-go/smg/domain/errs"
	"github.com/smg-go/smg/domain/tenant"
	"github.com/smg-go/smg/domain/wire"
	"github.com/smg-go/smg/ports"
)

// Recorder records the per-tenant series (adapters/metrics): outcome is "admitted" or
// "limited" (limit: the limit's name, "" when admitted); kind is "prompt" or "output".
// Called from request goroutines; must be cheap.
type Recorder interface {
	Admission(tenantName, outcome, limit string)
	TokensReserved(tenantName, kind string, n int64)
	TokensSettled(tenantName, kind string, n int64)
}

// Options configure Budgets.
type Options struct {
	// TTL is how long a reservation's concurrency entry lives without a settle (a replica
	// killed mid-request frees it after this): the request timeout plus a margin.
	TTL time.Duration
	// Recorder may be nil.
	Recorder Recorder
	// Logger receives store failures (slog.Default when nil).
	Logger *slog.Logger
}

// Budgets is the admission check of tenants' budgets. A nil *Budgets admits everything.
type Budgets struct {
	store ports.TenantBudgets
	o     Options
}

// New returns Budgets over store.
func New(store ports.TenantBudgets, o Options) *Budgets {
	if o.TTL <= 0 {
		o.TTL = 10 * time.Minute
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return &Budgets{store: store, o: o}
}

// Limited reports whether t has any limit.
func Limited(t tenant.Tenant) bool {
	l := t.Limits
	return l.RequestsPerMinute > 0 || l.PromptTokensPerMinute > 0 || l.OutputTokensPerMinute > 0 || l.MaxConcurrentRequests > 0
}

// Admit reserves est for the tenant ctx carries (tenant.FromContext). It returns nil and
// nil for a request without a tenant or whose tenant has no limits; a *Ticket to settle
// when admitted; or the 429 tenant_rate_limited *errs.Error (Retry-After, the limit named
// with its value) when a limit would be passed. A store that fails admits the request
// (logged): a budget outage must not become a fleet outage (the Redis store falls back to
// memory itself first).
func (b *Budgets) Admit(ctx context.Context, est ports.TokenUse) (*Ticket, *errs.Error) {
	if b == nil {
		return nil, nil
	}
	t, ok := tenant.FromContext(ctx)
	if !ok || !Limited(t) {
		return nil, nil
	}
	r, d, err := b.store.Reserve(ctx, t, est, b.o.TTL)
	if err != nil {
		b.o.Logger.WarnContext(ctx, "tenant budget not checked: the store failed; request admitted", "tenant", t.Name, "err", err)
		return nil, nil
	}
	if d != nil {
		if b.o.Recorder != nil {
			b.o.Recorder.Admission(t.Name, "limited", d.Limit)
		}
		secs := int(math.Ceil(d.RetryAfter.Seconds()))
		return nil, &errs.Error{Status: http.StatusTooManyRequests, Code: wire.CodeTenantRateLimited, RetryAfterSecs: secs,
			Message: "tenant '" + t.Name + "' is over its " + d.Limit + " limit (" + strconv.FormatInt(d.Value, 10) + "); retry after " + strconv.Itoa(secs) + " s"}
	}
	if b.o.Recorder != nil {
		b.o.Recorder.Admission(t.Name, "admitted", "")
		b.o.Recorder.TokensReserved(t.Name, "prompt", r.Reserved.Prompt)
		b.o.Recorder.TokensReserved(t.Name, "output", r.Reserved.Output)
	}
	return &Ticket{b: b, r: r}, nil
}

// Ticket is one admitted request's reservation.
type Ticket struct {
	b    *Budgets
	r    ports.Reservation
	once sync.Once
}

// Reserved is what the ticket charged (the estimate, capped at the limits).
func (k *Ticket) Reserved() ports.TokenUse { return k.r.Reserved }

// Settle replaces the reservation by used and frees its concurrency entry. Only the first
// call counts; it runs on its own short context, so a request whose client left still
// settles. A nil Ticket does nothing.
func (k *Ticket) Settle(used ports.TokenUse) {
	if k == nil {
		return
	}
	k.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := k.b.store.Settle(ctx, k.r, used); err != nil {
			k.b.o.Logger.Warn("tenant budget not settled; its reservation expires on its own", "tenant", k.r.Tenant.Name, "err", err)
		}
		if rec := k.b.o.Recorder; rec != nil {
			rec.TokensSettled(k.r.Tenant.Name, "prompt", used.Prompt)
			rec.TokensSettled(k.r.Tenant.Name, "output", used.Output)
		}
	})
}
