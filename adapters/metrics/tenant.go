package metrics

import "github.com/prometheus/client_golang/prometheus"

// Per-tenant series of the tenants' budgets (--tenants-file). The tenant label is the
// tenant's name from the file (bounded by the file; never a key).
const (
	// NameTenantRequests counts budget decisions: outcome "admitted" or "limited" (limit:
	// the limit that refused it, "" when admitted).
	NameTenantRequests = "smg_tenant_requests_total"
	// NameTenantTokensReserved counts tokens reserved at admission (kind prompt|output).
	NameTenantTokensReserved = "smg_tenant_tokens_reserved_total"
	// NameTenantTokensSettled counts tokens the answers really used (kind prompt|output).
	NameTenantTokensSettled = "smg_tenant_tokens_settled_total"
)

// TenantMetrics records the per-tenant budget series (tenantbudget.Recorder).
type TenantMetrics struct {
	requests, reserved, settled *prometheus.CounterVec
}

// NewTenantMetrics registers the per-tenant series on reg.
func NewTenantMetrics(reg *prometheus.Registry) (*TenantMetrics, error) {
	m := &TenantMetrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: NameTenantRequests,
			Help: "Requests of a tenant with limits, by budget decision (admitted, or limited by which limit)."}, []string{"tenant", "outcome", "limit"}),
		reserved: prometheus.NewCounterVec(prometheus.CounterOpts{Name: NameTenantTokensReserved,
			Help: "Tokens reserved against a tenant's budgets at admission (the estimate: prompt, and output from max_tokens)."}, []string{"tenant", "kind"}),
		settled: prometheus.NewCounterVec(prometheus.CounterOpts{Name: NameTenantTokensSettled,
			Help: "Tokens a tenant's requests really used, settled against the reservation when they ended."}, []string{"tenant", "kind"}),
	}
	for _, c := range []prometheus.Collector{m.requests, m.reserved, m.settled} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// Admission counts one budget decision.
func (m *TenantMetrics) Admission(tenant, outcome, limit string) {
	m.requests.WithLabelValues(tenant, outcome, limit).Inc()
}

// TokensReserved adds n reserved tokens of kind.
func (m *TenantMetrics) TokensReserved(tenant, kind string, n int64) {
	if n > 0 {
		m.reserved.WithLabelValues(tenant, kind).Add(float64(n))
	}
}

// TokensSettled adds n used tokens of kind.
func (m *TenantMetrics) TokensSettled(tenant, kind string, n int64) {
	if n > 0 {
		m.settled.WithLabelValues(tenant, kind).Add(float64(n))
	}
}
