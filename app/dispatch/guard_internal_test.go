package dispatch

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/adapters/tenants"
	"github.com/smg-go/smg/domain/tenant"
	"github.com/smg-go/smg/ports"
)

func TestGuardPutsTheTenantOnTheContext(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "tenants.yaml")
	require.NoError(t, os.WriteFile(path, []byte("- name: gold\n  priority: 7\n  api_keys: [kg]\n  limits: {max_concurrent_requests: 2}\n"), 0o600))
	res, err := tenants.New(tenants.Options{File: path, APIKey: "gw"})
	require.NoError(t, err)
	var seen tenant.Tenant
	var had bool
	routes := Guard([]ports.Route{{Pattern: "POST /x", Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen, had = tenant.FromContext(r.Context())
	})}}, res, []string{"X-Request-Id"})

	serve := func(key string) *httptest.ResponseRecorder {
		had, seen = false, tenant.Tenant{}
		req := httptest.NewRequest(http.MethodPost, "/x", nil)
		if key != "" {
			req.Header.Set("Authorization", "Bearer "+key)
		}
		rec := httptest.NewRecorder()
		routes[0].Handler.ServeHTTP(rec, req)
		return rec
	}
	rec := serve("kg")
	assert.Equal(t, http.StatusOK, rec.Code)
	require.True(t, had)
	assert.Equal(t, tenant.Tenant{Name: "gold", Priority: 7, Limits: tenant.Limits{MaxConcurrentRequests: 2}}, seen)

	rec = serve("gw")
	assert.Equal(t, http.StatusOK, rec.Code)
	assert.False(t, had, "the --api-key holder carries no tenant")

	rec = serve("nope")
	assert.Equal(t, http.StatusUnauthorized, rec.Code)
	assert.Equal(t, "invalid_api_key", rec.Header().Get("X-SMG-Error-Code"))
	assert.NotEmpty(t, rec.Header().Get("WWW-Authenticate"))
	assert.JSONEq(t, `{"error":{"type":"authentication_error","code":"invalid_api_key","message":"Missing or invalid API key: send the gateway's --api-key or your tenant's key as 'Authorization: Bearer <key>'","param":null}}`, rec.Body.String())
}

func TestLegHeadersDropTheTenantKey(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "tenants.yaml")
	require.NoError(t, os.WriteFile(path, []byte("- name: gold\n  api_keys: [kg]\n"), 0o600))
	res, err := tenants.New(tenants.Options{File: path})
	require.NoError(t, err)
	d := &Dispatcher{tenants: res}
	h := d.legHeaders(http.Header{"Authorization": {"Bearer kg"}})
	assert.Empty(t, h.Get("Authorization"), "a tenant's key is the gateway's credential, not the engine's")
}
