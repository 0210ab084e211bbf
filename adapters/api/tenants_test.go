package api_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/adapters/api"
	"github.com/smg-go/smg/domain/tenant"
	"github.com/smg-go/smg/ports"
)

type fakeReporter struct {
	ss  []ports.TenantStatus
	err error
}

func (f fakeReporter) TenantStatuses(context.Context) ([]ports.TenantStatus, error) {
	return f.ss, f.err
}

func serveTenants(t *testing.T, d api.Deps) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	api.Register(api.NewHumaAPI(mux), d)
	srv := httptest.NewServer(mux)
	t.Cleanup(func() { srv.Close(); http.DefaultClient.CloseIdleConnections() })
	return srv
}

func getTenantsBody(t *testing.T, srv *httptest.Server, key string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, srv.URL+"/tenants", nil)
	require.NoError(t, err)
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b)
}

// GET /tenants is guarded by the admin key and renders each tenant's limits (absent:
// unlimited), usage (bucket levels to a tenth) and queued requests; without a reporter the
// list is empty, and a failing store is a 500.
func TestTenantsRoute(t *testing.T) {
	t.Parallel()
	rep := fakeReporter{ss: []ports.TenantStatus{{
		Tenant: tenant.Tenant{Name: "batch", Priority: 2, Limits: tenant.Limits{OutputTokensPerMinute: 20000, MaxConcurrentRequests: 4}},
		Usage:  ports.BudgetUsage{Requests: 1.04, PromptTokens: 12.26, OutputTokens: 18000.44, Concurrent: 3}, Queued: 5,
	}}}
	srv := serveTenants(t, api.Deps{Auth: api.AuthOptions{AdminAPIKey: "adm"}, Tenants: rep})
	status, _ := getTenantsBody(t, srv, "")
	assert.Equal(t, http.StatusUnauthorized, status)
	status, body := getTenantsBody(t, srv, "adm")
	require.Equal(t, http.StatusOK, status, body)
	assert.JSONEq(t, `{"tenants":[{"name":"batch","priority":2,
		"limits":{"output_tokens_per_minute":20000,"max_concurrent_requests":4},
		"usage":{"requests_per_minute":1,"prompt_tokens_per_minute":12.3,"output_tokens_per_minute":18000.4,"max_concurrent_requests":3},
		"queued":5}]}`, body)

	status, body = getTenantsBody(t, serveTenants(t, api.Deps{}), "")
	require.Equal(t, http.StatusOK, status)
	assert.Contains(t, body, `"tenants":[]`)

	status, _ = getTenantsBody(t, serveTenants(t, api.Deps{Tenants: fakeReporter{err: errors.New("redis gone")}}), "")
	assert.Equal(t, http.StatusInternalServerError, status)
}
