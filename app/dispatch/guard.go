package dispatch

import (
	"net/http"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/smg-go/smg/adapters/httpauth"
	"github.com/smg-go/smg/domain/errs"
	"github.com/smg-go/smg/domain/tenant"
	"github.com/smg-go/smg/domain/wire"
	"github.com/smg-go/smg/ports"
)

// Guard wraps every data-plane route with the checks that come before any work:
//   - authentication and the tenant (auth, ports.TenantResolver: --api-key, --tenants-file,
//     --tenant-header): a request it refuses is answered 401 invalid_api_key (with a
//     WWW-Authenticate challenge; OpenAI clients send their key as `Authorization: Bearer
//     <key>`); a named tenant is put on the request's context (tenant.WithTenant), where
//     the HTTP dispatch and the gRPC pipeline (which runs on that context) read it;
//   - every configured request-id header (--request-id-headers) present must hold a valid
//     id (wire.ValidRequestID: at most wire.MaxRequestIDLen bytes of letters, digits and the
//     marks "-_.:/+=@"), else 400 invalid_request_id, so a hostile id never reaches an
//     engine or a log line.
//
// Both answer in the seed's error shape with X-SMG-Error-Code (WriteError).
func Guard(routes []ports.Route, auth ports.TenantResolver, requestIDHeaders []string) []ports.Route {
	requestIDHeaders = canonicalHeaders(requestIDHeaders)
	out := make([]ports.Route, len(routes))
	for i, r := range routes {
		next := r.Handler
		out[i] = ports.Route{Pattern: r.Pattern, Handler: http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			t, named, aerr := auth.Resolve(req.Header)
			if aerr != nil {
				w.Header().Set("WWW-Authenticate", httpauth.Challenge)
				WriteError(w, aerr)
				return
			}
			for _, h := range requestIDHeaders {
				for _, v := range req.Header.Values(h) {
					if v = strings.TrimSpace(v); v != "" && !wire.ValidRequestID(v) {
						WriteError(w, errs.New(http.StatusBadRequest, wire.CodeInvalidRequestID,
							"invalid %s header: a request id is 1 to %d characters of letters, digits and - _ . : / + = @",
							h, wire.MaxRequestIDLen))
						return
					}
				}
			}
			if named {
				// The access line and the server span name the tenant.
				ports.RequestInfoFrom(req.Context()).SetTenant(t.Name)
				trace.SpanFromContext(req.Context()).SetAttributes(attribute.String("smg.tenant", t.Name))
				req = req.WithContext(tenant.WithTenant(req.Context(), t))
				ports.RequestInfoFrom(req.Context()).SetTenant(t.Name) // the access line names it
			}
			next.ServeHTTP(w, req)
		})}
	}
	return out
}

// canonicalHeaders returns a copy of names in canonical header form (http.CanonicalHeaderKey).
// http.Header's Get and Values canonicalize their argument, which allocates for a name
// that is not canonical ("x-request-id"): these lookups run on every request.
func canonicalHeaders(names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = http.CanonicalHeaderKey(n)
	}
	return out
}
