package ports

import (
	"context"
	"time"

	"github.com/smg-go/smg/domain/tenant"
)

// TokenUse is a request's token count: the prompt and the output.
type TokenUse struct {
	Prompt, Output int64
}

// Reservation is what a TenantBudgets.Reserve took for one request, handed back to Settle.
type Reservation struct {
	// Tenant is the tenant the reservation was charged to.
	Tenant tenant.Tenant
	// ID identifies the reservation's concurrency entry.
	ID string
	// Reserved is what was charged: the estimate, each part capped at its per-minute limit
	// (a request larger than the whole budget waits for an empty bucket).
	Reserved TokenUse
	// TTL is how long the reservation's concurrency entry lives without a Settle (a
	// replica that dies mid-request leaks it no longer than this).
	TTL time.Duration
}

// BudgetDenial says why a reservation was refused: the limit's contract name
// (requests_per_minute, prompt_tokens_per_minute, output_tokens_per_minute or
// max_concurrent_requests), its value, and when to try again.
type BudgetDenial struct {
	Limit      string
	Value      int64
	RetryAfter time.Duration
}

// TenantBudgets keeps the tenants' per-minute budgets and concurrency (memory per replica,
// or Redis shared by every replica). Each per-minute limit is a token bucket of the limit's
// size refilled at limit/60 per second: at most a full minute's budget at once, and the
// limit per minute sustained. Calls are concurrent and bounded in time.
type TenantBudgets interface {
	// Reserve charges one request and its estimated tokens to t, with a concurrency entry
	// living ttl. When a limit would be passed it charges nothing and returns the denial.
	// Errors: the store failed (the caller decides whether to admit).
	Reserve(ctx context.Context, t tenant.Tenant, est TokenUse, ttl time.Duration) (Reservation, *BudgetDenial, error)
	// Settle replaces the reservation's tokens with the request's real use (used; more or
	// less than reserved) and frees its concurrency entry. Settling twice frees nothing
	// more.
	Settle(ctx context.Context, r Reservation, used TokenUse) error
	// Usage reads t's current bucket levels (tokens charged and not yet refilled) and its
	// live concurrency entries, for `smg doctor` and tests.
	Usage(ctx context.Context, t tenant.Tenant) (BudgetUsage, error)
}

// BudgetUsage is a tenant's current charge against its limits.
type BudgetUsage struct {
	Requests, PromptTokens, OutputTokens float64
	Concurrent                           int64
}

// TenantStatus is one tenant's limits and its current charge against them, as GET /tenants
// shows it.
type TenantStatus struct {
	// Tenant is the tenant in force (name, priority, limits).
	Tenant tenant.Tenant
	// Usage is its current charge (TenantBudgets.Usage: shared by every replica with Redis).
	Usage BudgetUsage
	// Queued counts its requests waiting in this replica's flow-control queue.
	Queued int64
}

// TenantReporter lists the tenants of the tenants file in force, in file order, with their
// usage. Errors: the budget store failed.
type TenantReporter interface {
	TenantStatuses(ctx context.Context) ([]TenantStatus, error)
}
