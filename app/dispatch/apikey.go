package dispatch

import (
	"github.com/smg-go/smg/adapters/tenants"
	"github.com/smg-go/smg/ports"
)

// apiKeyOnly is the TenantResolver of a dispatcher built without one: --api-key alone (""
// leaves the routes open), every request the anonymous tenant.
func apiKeyOnly(apiKey string) ports.TenantResolver {
	r, _ := tenants.New(tenants.Options{APIKey: apiKey}) // no file: cannot fail
	return r
}
