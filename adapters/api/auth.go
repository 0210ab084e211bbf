package api

import (
	"net"
	"net/http"

	"github.com/danielgtaylor/huma/v2"

	"github.com/smg-go/smg/adapters/httpauth"
	"github.com/smg-go/smg/domain/errs"
	"github.com/smg-go/smg/domain/wire"
	"github.com/smg-go/smg/ports"
)

// Security scheme names of the OpenAPI document (components.securitySchemes).
const (
	// SchemeAdmin guards the worker-management routes when --admin-api-key is set.
	SchemeAdmin = "adminApiKey"
	// SchemeData guards the data-plane routes (here GET /v1/models) when --api-key is set.
	SchemeData = "apiKey"
)

// AuthOptions are the API keys of the routes this package serves; an empty key leaves its
// routes open. Keys are secrets: they are never logged nor echoed.
type AuthOptions struct {
	// AdminAPIKey (--admin-api-key) is required as `Authorization: Bearer <key>` on every
	// /workers route.
	AdminAPIKey string
	// APIKey (--api-key) is required the same way on GET /v1/models. /health, /liveness,
	// /readiness and the OpenAPI document stay open.
	APIKey string
	// DataAuth, when set, checks the data-plane routes instead of APIKey: it also lets a
	// tenant's key through (--tenants-file; ports.TenantResolver).
	DataAuth ports.TenantResolver
}

// declareSecurity adds the two bearer schemes to the document (whether or not a key is
// configured: the document describes what an operator can turn on).
func declareSecurity(h huma.API) {
	c := h.OpenAPI().Components
	if c.SecuritySchemes == nil {
		c.SecuritySchemes = map[string]*huma.SecurityScheme{}
	}
	c.SecuritySchemes[SchemeAdmin] = &huma.SecurityScheme{Type: "http", Scheme: "bearer",
		Description: "The gateway's --admin-api-key (or SMG_ADMIN_API_KEY, --admin-api-key-file) as `Authorization: Bearer <key>`. Required on every worker-management route when set; without it these routes are open."}
	c.SecuritySchemes[SchemeData] = &huma.SecurityScheme{Type: "http", Scheme: "bearer",
		Description: "The gateway's --api-key as `Authorization: Bearer <key>` (how OpenAI clients send their key). Required on the data-plane routes when set; health, readiness, liveness and metrics stay open."}
}

// security is an operation's security requirement for scheme.
func security(scheme string) []map[string][]string { return []map[string][]string{{scheme: {}}} }

// requireKey is a huma middleware answering 401 UNAUTHORIZED (worker-API shape, with a
// WWW-Authenticate challenge) unless the request presents key as a Bearer token. A key that
// is not set lets every request through.
func requireKey(h huma.API, key httpauth.Key, what string) func(huma.Context, func(huma.Context)) {
	return func(ctx huma.Context, next func(huma.Context)) {
		if key.Allows(ctx.Header("Authorization")) {
			next(ctx)
			return
		}
		ctx.SetHeader("WWW-Authenticate", httpauth.Challenge)
		msg := "Missing or invalid " + what + ": send it as 'Authorization: Bearer <key>'"
		_ = huma.WriteErr(h, ctx, http.StatusUnauthorized, msg)
	}
}

// requireDataKey is requireKey for a data-plane route (/v1/models): without the --api-key
// Bearer token (or a tenant's key, with a DataAuth) the answer is the data plane's own 401
// (errs.Body, code invalid_api_key, X-SMG-Error-Code), as on the inference routes.
func requireDataKey(a AuthOptions) func(huma.Context, func(huma.Context)) {
	key := httpauth.NewKey(a.APIKey)
	return func(ctx huma.Context, next func(huma.Context)) {
		if a.DataAuth != nil {
			h := http.Header{}
			h.Set("Authorization", ctx.Header("Authorization"))
			if _, _, err := a.DataAuth.Resolve(h); err == nil {
				next(ctx)
				return
			}
		} else if key.Allows(ctx.Header("Authorization")) {
			next(ctx)
			return
		}
		e := &errs.Error{Status: http.StatusUnauthorized, Code: wire.CodeInvalidAPIKey,
			Message: "Missing or invalid API key (--api-key): send it as 'Authorization: Bearer <key>'"}
		ctx.SetHeader("WWW-Authenticate", httpauth.Challenge)
		ctx.SetHeader("Content-Type", "application/json")
		ctx.SetHeader(wire.HeaderErrorCode, e.Code)
		ctx.SetStatus(e.Status)
		_, _ = ctx.BodyWriter().Write(errs.Body(e))
	}
}

// IsLoopbackHost reports whether host (a --host value) only accepts local connections.
func IsLoopbackHost(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// open is the security requirement of a route that needs no key (health, liveness,
// readiness): one empty requirement, so validators see it was not forgotten.
var open = []map[string][]string{{}}
