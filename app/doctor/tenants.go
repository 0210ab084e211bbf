package doctor

import (
	"fmt"
	"math"
	"strings"

	"github.com/smg-go/smg/domain/tenant"
)

// Tenant finding kinds.
const (
	// KindTenantNearLimit is a tenant at TenantWarnFraction of one of its limits or more.
	KindTenantNearLimit = "tenant_near_limit"
	// KindTenantsUnreadable is a gateway whose GET /tenants failed (other than a 404 of a
	// gateway without it).
	KindTenantsUnreadable = "tenants_unreadable"
)

// TenantWarnFraction is the share of a limit at which a tenant is reported: 80 %.
const TenantWarnFraction = 0.8

// TenantUse is one tenant as GET /tenants reports it: its limits (0: unlimited), its
// current usage of each (bucket levels for the per-minute limits, requests in flight) and
// its requests queued on the replica asked.
type TenantUse struct {
	Name                                 string
	Limits                               tenant.Limits
	Requests, PromptTokens, OutputTokens float64
	Concurrent, Queued                   int64
}

// TenantsNearLimits returns a warning per tenant whose usage of any limit is at
// TenantWarnFraction of it or more, naming every such limit with its usage; such a tenant's
// next requests may get 429 tenant_rate_limited. Tenants without limits are never reported.
func TenantsNearLimits(ts []TenantUse) []Finding {
	var out []Finding
	for _, t := range ts {
		uses := []struct {
			name  string
			used  float64
			limit int64
		}{
			{"requests_per_minute", t.Requests, t.Limits.RequestsPerMinute},
			{"prompt_tokens_per_minute", t.PromptTokens, t.Limits.PromptTokensPerMinute},
			{"output_tokens_per_minute", t.OutputTokens, t.Limits.OutputTokensPerMinute},
			{"max_concurrent_requests", float64(t.Concurrent), t.Limits.MaxConcurrentRequests},
		}
		var near []string
		for _, u := range uses {
			if u.limit <= 0 || u.used < TenantWarnFraction*float64(u.limit) {
				continue
			}
			near = append(near, fmt.Sprintf("%s %.0f of %d (%d %%)", u.name, math.Ceil(u.used), u.limit,
				int(math.Floor(100*u.used/float64(u.limit)))))
		}
		if len(near) == 0 {
			continue
		}
		msg := fmt.Sprintf("tenant %s is at %.0f %% or more of a limit: %s; its next requests may get 429 tenant_rate_limited "+
			"(raise its limits in --tenants-file, or slow its clients)", t.Name, 100*TenantWarnFraction, strings.Join(near, ", "))
		if t.Queued > 0 {
			msg += fmt.Sprintf("; %d of its requests are queued on this gateway replica", t.Queued)
		}
		out = append(out, Finding{Kind: KindTenantNearLimit, Severity: SeverityWarning, Tenant: t.Name, Message: msg})
	}
	return out
}

// TenantsUnreadable is the warning of a gateway whose tenant list could not be read.
func TenantsUnreadable(err error) Finding {
	return Finding{Kind: KindTenantsUnreadable, Severity: SeverityWarning,
		Message: fmt.Sprintf("tenants' usage not checked: %v", err)}
}
