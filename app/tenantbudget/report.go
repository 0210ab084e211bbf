package tenantbudget

import (
	"context"

	"github.com/smg-go/smg/domain/tenant"
	"github.com/smg-go/smg/ports"
)

// Report is the ports.TenantReporter of GET /tenants: the tenants in force (the tenants
// file), each one's usage read from the budget store (shared by every replica with Redis),
// and its requests queued on this replica.
type Report struct {
	// List returns the tenants in force, in file order.
	List func() []tenant.Tenant
	// Store holds the budgets.
	Store ports.TenantBudgets
	// Queued counts the named tenants' queued requests on this replica; nil: none.
	Queued func(names []string) map[string]int64
}

// TenantStatuses implements ports.TenantReporter. It reads each tenant's usage in turn
// (each read bounded by the store); the first failure is returned.
func (r Report) TenantStatuses(ctx context.Context) ([]ports.TenantStatus, error) {
	ts := r.List()
	out := make([]ports.TenantStatus, 0, len(ts))
	names := make([]string, 0, len(ts))
	for _, t := range ts {
		names = append(names, t.Name)
	}
	var queued map[string]int64
	if r.Queued != nil && len(ts) > 0 {
		queued = r.Queued(names)
	}
	for _, t := range ts {
		u, err := r.Store.Usage(ctx, t)
		if err != nil {
			return nil, err
		}
		out = append(out, ports.TenantStatus{Tenant: t, Usage: u, Queued: queued[t.Name]})
	}
	return out, nil
}

var _ ports.TenantReporter = Report{}
