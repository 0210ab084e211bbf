package dispatch

import (
	"net/http"
	"strings"

	"github.com/smg-go/smg/adapters/httpauth"
	"github.com/smg-go/smg/domain/errs"
	"github.com/smg-go/smg/domain/wire"
	"github.com/smg-go/smg/ports"
)

// Guard wraps every data-plane route with the checks that come before any work:
//   - --api-key: without `Authorization: Bearer <key>` the answer is 401 invalid_api_key
//     (with a WWW-Authenticate challenge; OpenAI clients send their key this way);
//   - every configured request-id header (--request-id-headers) present must hold a valid
//     id (wire.ValidRequestID: at most wire.MaxRequestIDLen bytes of letters, digits and the
//     marks "-_.:/+=@"), else 400 invalid_request_id, so a hostile id never reaches an
//     engine or a log line.
//
// Both answer in the seed's error shape with X-SMG-Error-Code (WriteError).
func Guard(routes []ports.Route, apiKey string, requestIDHeaders []string) []ports.Route {
	key := httpauth.NewKey(apiKey)
	out := make([]ports.Route, len(routes))
	for i, r := range routes {
		next := r.Handler
		out[i] = ports.Route{Pattern: r.Pattern, Handler: http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			if !key.Allows(req.Header.Get("Authorization")) {
				w.Header().Set("WWW-Authenticate", httpauth.Challenge)
				WriteError(w, errs.New(http.StatusUnauthorized, wire.CodeInvalidAPIKey,
					"Missing or invalid API key: send the gateway's --api-key as 'Authorization: Bearer <key>'"))
				return
			}
			for _, h := range requestIDHeaders {
				for _, v := range req.Header.Values(h) {
					if v = strings.TrimSpace(v); v != "" && !wire.ValidRequestID(v) {
						WriteError(w, errs.New(http.StatusBadRequest, wire.CodeInvalidRequestID,
							"invalid %s header: a request id is 1 to %d characters of letters, digits and - _ . : / + = @",
							http.CanonicalHeaderKey(h), wire.MaxRequestIDLen))
						return
					}
				}
			}
			next.ServeHTTP(w, req)
		})}
	}
	return out
}
