// Package tenant names who a request is for: the tenant the gateway resolved from its API
// key (--tenants-file) or from a trusted header, with the tenant's priority and limits.
// Admission (token budgets) and the flow-control queue (priorities, fair share) read it
// from the request's context; both are per tenant, so both key on Name.
package tenant

import "context"

// Limits are a tenant's budgets (the tenants file's `limits` map). 0 means unlimited.
type Limits struct {
	// RequestsPerMinute caps admitted requests per rolling minute (requests_per_minute).
	RequestsPerMinute int64 `yaml:"requests_per_minute" json:"requests_per_minute,omitempty"`
	// PromptTokensPerMinute caps prompt tokens per minute (prompt_tokens_per_minute).
	PromptTokensPerMinute int64 `yaml:"prompt_tokens_per_minute" json:"prompt_tokens_per_minute,omitempty"`
	// OutputTokensPerMinute caps output tokens per minute (output_tokens_per_minute).
	OutputTokensPerMinute int64 `yaml:"output_tokens_per_minute" json:"output_tokens_per_minute,omitempty"`
	// MaxConcurrentRequests caps requests in flight at once (max_concurrent_requests).
	MaxConcurrentRequests int64 `yaml:"max_concurrent_requests" json:"max_concurrent_requests,omitempty"`
}

// Tenant is one entry of the tenants file. The zero Tenant (Name "") is the anonymous
// tenant of a gateway without a tenants file: no limits, priority 0.
type Tenant struct {
	// Name identifies the tenant in metrics, logs, spans and Redis keys.
	Name string `json:"name"`
	// Priority orders queued requests: higher is served first. Default 0.
	Priority int `json:"priority"`
	// Limits are the tenant's budgets.
	Limits Limits `json:"limits"`
}

type ctxKey struct{}

// WithTenant returns ctx carrying t.
func WithTenant(ctx context.Context, t Tenant) context.Context {
	return context.WithValue(ctx, ctxKey{}, t)
}

// FromContext returns the tenant ctx carries and whether it carries one; without one it
// returns the zero (anonymous) Tenant and false.
func FromContext(ctx context.Context) (Tenant, bool) {
	t, ok := ctx.Value(ctxKey{}).(Tenant)
	return t, ok
}
