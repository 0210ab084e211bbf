package tenantbudget

import (
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/fx"

	"github.com/smg-go/smg/adapters/metrics"
	"github.com/smg-go/smg/app/config"
	"github.com/smg-go/smg/ports"
)

// ttlMargin is added to --request-timeout-secs for a reservation's TTL: a request the
// gateway still serves never loses its concurrency entry.
const ttlMargin = 30 * time.Second

type moduleIn struct {
	fx.In
	Config config.Config
	Store  ports.TenantBudgets
	Reg    *prometheus.Registry `optional:"true"`
	Log    *slog.Logger         `optional:"true"`
}

// Module provides *Budgets over the shared-state store's ports.TenantBudgets, with the
// per-tenant series (smg_tenant_*) when a Prometheus registry is in the graph.
func Module() fx.Option {
	return fx.Module("tenantbudget", fx.Provide(func(in moduleIn) (*Budgets, error) {
		o := Options{TTL: in.Config.RequestTimeout + ttlMargin, Logger: in.Log}
		if in.Reg != nil {
			m, err := metrics.NewTenantMetrics(in.Reg)
			if err != nil {
				return nil, err
			}
			o.Recorder = m
		}
		return New(in.Store, o), nil
	}))
}
