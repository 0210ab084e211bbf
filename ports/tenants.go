package ports

import (
	"net/http"

	"github.com/smg-go/smg/domain/errs"
	"github.com/smg-go/smg/domain/tenant"
)

// TenantResolver authenticates a data-plane request and names its tenant (adapters/tenants:
// --api-key, --tenants-file, --tenant-header). Called once per request, before any work,
// from request goroutines concurrently; it must be cheap and never block.
type TenantResolver interface {
	// Resolve returns the request's tenant from its headers. named is false for the
	// anonymous tenant (no tenants file entry: an open gateway, or the --api-key holder).
	// A request that must not pass gets a 401 *errs.Error (code invalid_api_key), nil
	// otherwise.
	Resolve(h http.Header) (t tenant.Tenant, named bool, err *errs.Error)
	// AuthRequired reports whether data-plane requests currently need a key (--api-key,
	// or a tenant with keys): the client's Authorization is then the gateway's own
	// credential and is not passed on to engines.
	AuthRequired() bool
}
