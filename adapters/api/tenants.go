package api

import (
	"context"
	"math"
	"net/http"

	"github.com/danielgtaylor/huma/v2"

	"github.com/smg-go/smg/adapters/httpauth"
	"github.com/smg-go/smg/ports"
)

// TenantLimits are a tenant's limits as its tenants-file entry sets them (absent: unlimited).
type TenantLimits struct {
	RequestsPerMinute     int64 `json:"requests_per_minute,omitempty" doc:"Admitted requests per minute."`
	PromptTokensPerMinute int64 `json:"prompt_tokens_per_minute,omitempty" doc:"Prompt tokens per minute."`
	OutputTokensPerMinute int64 `json:"output_tokens_per_minute,omitempty" doc:"Output tokens per minute."`
	MaxConcurrentRequests int64 `json:"max_concurrent_requests,omitempty" doc:"Requests in flight at once."`
}

// TenantUsage is a tenant's current charge, keyed like its limits: for the per-minute limits
// the level of the limit's token bucket (charged and not yet refilled at limit/60 per
// second), for max_concurrent_requests the requests in flight.
type TenantUsage struct {
	RequestsPerMinute     float64 `json:"requests_per_minute" doc:"Requests charged and not yet refilled (the level of the requests_per_minute bucket; with --redis-url shared by every replica)."`
	PromptTokensPerMinute float64 `json:"prompt_tokens_per_minute" doc:"Prompt tokens charged (reserved, then settled) and not yet refilled."`
	OutputTokensPerMinute float64 `json:"output_tokens_per_minute" doc:"Output tokens charged (reserved, then settled) and not yet refilled."`
	MaxConcurrentRequests int64   `json:"max_concurrent_requests" doc:"Requests in flight (live reservations)."`
}

// TenantInfo is one tenant as GET /tenants shows it.
type TenantInfo struct {
	Name     string       `json:"name" doc:"Tenant name (tenants file)."`
	Priority int          `json:"priority" doc:"Flow-control priority, higher first."`
	Limits   TenantLimits `json:"limits"`
	Usage    TenantUsage  `json:"usage"` // shared by every replica with --redis-url
	Queued   int64        `json:"queued" doc:"Requests of this tenant waiting in this replica's flow-control queue."`
}

// TenantList is the GET /tenants body.
type TenantList struct {
	Tenants []TenantInfo `json:"tenants" nullable:"false" doc:"The tenants file's tenants in file order; empty without --tenants-file."`
}

type listTenantsOutput struct {
	Body TenantList
}

const tagTenants = "tenants"

// registerTenants adds GET /tenants (admin key when set). Without a reporter (no tenants
// wiring) the list is empty.
func registerTenants(h huma.API, d Deps) {
	huma.Register(h, huma.Operation{
		OperationID: "list-tenants",
		Middlewares: huma.Middlewares{requireKey(h, httpauth.NewKey(d.Auth.AdminAPIKey), "admin API key (--admin-api-key)")},
		Security:    security(SchemeAdmin),
		Method:      http.MethodGet,
		Path:        "/tenants",
		Summary:     "List tenants and their usage",
		Description: "Each tenant of --tenants-file with its priority, its limits and its current usage of each (the token buckets' levels and the requests in flight, shared by every replica with --redis-url), and its requests queued on this replica. `smg doctor` warns about tenants at 80 % of a limit or more.",
		Tags:        []string{tagTenants},
		Errors:      []int{http.StatusUnauthorized, http.StatusInternalServerError},
	}, func(ctx context.Context, _ *struct{}) (*listTenantsOutput, error) {
		out := &listTenantsOutput{Body: TenantList{Tenants: []TenantInfo{}}}
		if d.Tenants == nil {
			return out, nil
		}
		ss, err := d.Tenants.TenantStatuses(ctx)
		if err != nil {
			return nil, toErrorBody(err)
		}
		for _, s := range ss {
			out.Body.Tenants = append(out.Body.Tenants, tenantInfo(s))
		}
		return out, nil
	})
}

// tenantInfo renders s; bucket levels are rounded to a tenth.
func tenantInfo(s ports.TenantStatus) TenantInfo {
	l, u := s.Tenant.Limits, s.Usage
	tenth := func(f float64) float64 { return math.Round(f*10) / 10 }
	return TenantInfo{Name: s.Tenant.Name, Priority: s.Tenant.Priority, Queued: s.Queued,
		Limits: TenantLimits{RequestsPerMinute: l.RequestsPerMinute, PromptTokensPerMinute: l.PromptTokensPerMinute,
			OutputTokensPerMinute: l.OutputTokensPerMinute, MaxConcurrentRequests: l.MaxConcurrentRequests},
		Usage: TenantUsage{RequestsPerMinute: tenth(u.Requests), PromptTokensPerMinute: tenth(u.PromptTokens),
			OutputTokensPerMinute: tenth(u.OutputTokens), MaxConcurrentRequests: u.Concurrent}}
}
