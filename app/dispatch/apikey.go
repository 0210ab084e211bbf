package dispatch

import (
	"github.com/smg-go/smg/adapters/tenants"
	"github.com/smg-go/smg/ports"
)

// orAPIKey is r, or for a dispatcher built without a TenantResolver, --api-key alone (""
// leaves the routes open), every request the anonymous tenant.
func orAPIKey(r ports.TenantResolver, apiKey string) ports.TenantResolver {
	if r != nil {
		return r
	}
	k, _ := tenants.New(tenants.Options{APIKey: apiKey}) // no file: cannot fail
	return k
}
