package app

import (
	"context"
	"log/slog"

	"go.uber.org/fx"

	"github.com/smg-go/smg/adapters/tenants"
	"github.com/smg-go/smg/app/admission"
	"github.com/smg-go/smg/app/config"
	"github.com/smg-go/smg/app/tenantbudget"
	"github.com/smg-go/smg/domain/tenant"
	"github.com/smg-go/smg/ports"
)

// tenantsModule provides the data plane's tenant resolver (--api-key, --tenants-file,
// --tenant-header) and the ports.TenantReporter of GET /tenants, and polls the tenants file
// while the app runs. A bad file fails the start with its line; a bad reload keeps the
// tenants in force.
func tenantsModule() fx.Option {
	return fx.Module("tenants", fx.Provide(
		func(lc fx.Lifecycle, c config.Config, log *slog.Logger) (*tenants.Resolver, error) {
			r, err := tenants.New(tenants.Options{File: c.TenantsFile, Header: c.TenantHeader, APIKey: c.APIKey, Logger: log})
			if err != nil {
				return nil, err
			}
			lc.Append(fx.Hook{
				OnStart: func(context.Context) error { r.Start(); return nil },
				OnStop:  func(context.Context) error { r.Close(); return nil },
			})
			return r, nil
		},
		func(r *tenants.Resolver) ports.TenantResolver { return r },
		// GET /tenants: the file's tenants, their shared usage, their queued requests here.
		func(r *tenants.Resolver, s ports.TenantBudgets, a *admission.Admitter) ports.TenantReporter {
			return tenantbudget.Report{List: func() []tenant.Tenant { return r.Directory().Tenants() }, Store: s, Queued: a.QueuedOf}
		},
	))
}
