package cli_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// cleanPD is a ready vLLM NIXL 1P+1D fleet: no worker finding.
const cleanPD = `{"workers":[
{"id":"p1","url":"http://127.0.0.1:1","worker_type":"prefill","connection_mode":"http","runtime_type":"vllm","kv_connector":"NixlConnector","status":"ready"},
{"id":"d1","url":"http://127.0.0.1:2","worker_type":"decode","connection_mode":"http","runtime_type":"vllm","kv_connector":"NixlConnector","status":"ready"}
],"total":2,"stats":{"prefill_count":1,"decode_count":1,"regular_count":0}}`

// fakeTenantGateway answers GET /workers with cleanPD and GET /tenants with
// tenants (404 when tenants is ""), checking the admin key on both.
func fakeTenantGateway(t *testing.T, tenants string) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer adm" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.URL.Path == "/workers":
			_, _ = w.Write([]byte(cleanPD))
		case r.URL.Path == "/tenants" && tenants != "":
			_, _ = w.Write([]byte(tenants))
		default:
			w.WriteHeader(http.StatusNotFound)
			_, _ = w.Write([]byte(`{"error":{"code":"not_found"}}`))
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

type tenantFinding struct {
	Kind, Severity, Tenant, Message string
}

func doctorTenantFindings(t *testing.T, srv *httptest.Server) (int, []tenantFinding, string) {
	t.Helper()
	code, out, errOut := runCLI([]string{"doctor", "--url", srv.URL, "--admin-api-key", "adm", "--json", "--no-health-probe"}, nil)
	var rep struct {
		Tenants  int             `json:"tenants"`
		Findings []tenantFinding `json:"findings"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &rep), "%s %s", out, errOut)
	assert.Equal(t, 0, code, "warnings keep exit 0: %s", errOut)
	return rep.Tenants, rep.Findings, out
}

// A tenant at 80 % or more of any limit gets one warning naming each such limit with its
// usage; tenants below, and tenants without limits, get none.
func TestDoctorWarnsAboutTenantsNearTheirLimits(t *testing.T) {
	t.Parallel()
	srv := fakeTenantGateway(t, `{"tenants":[
{"name":"batch","priority":0,"limits":{"output_tokens_per_minute":20000,"max_concurrent_requests":10},
 "usage":{"requests_per_minute":3,"prompt_tokens_per_minute":100,"output_tokens_per_minute":18400.5,"max_concurrent_requests":8},"queued":3},
{"name":"interactive","priority":10,"limits":{"requests_per_minute":600},
 "usage":{"requests_per_minute":479.9,"prompt_tokens_per_minute":0,"output_tokens_per_minute":0,"max_concurrent_requests":2},"queued":0},
{"name":"free","priority":0,"limits":{},
 "usage":{"requests_per_minute":1e6,"prompt_tokens_per_minute":0,"output_tokens_per_minute":0,"max_concurrent_requests":50},"queued":0}
]}`)
	n, fs, out := doctorTenantFindings(t, srv)
	assert.Equal(t, 3, n)
	require.Len(t, fs, 1, out)
	f := fs[0]
	assert.Equal(t, "tenant_near_limit", f.Kind)
	assert.Equal(t, "warning", f.Severity)
	assert.Equal(t, "batch", f.Tenant)
	assert.Contains(t, f.Message, "output_tokens_per_minute 18401 of 20000 (92 %)")
	assert.Contains(t, f.Message, "max_concurrent_requests 8 of 10 (80 %)")
	assert.Contains(t, f.Message, "3 of its requests are queued")

	code, text, _ := runCLI([]string{"doctor", "--url", srv.URL, "--admin-api-key", "adm", "--no-health-probe"}, nil)
	assert.Equal(t, 0, code)
	assert.Contains(t, text, ", 3 tenants")
	assert.Contains(t, text, "WARNING tenant batch [tenant_near_limit]: tenant batch is at 80 % or more of a limit")
}

// A fleet without tenants (an empty list) and a gateway without GET /tenants (404) give no
// tenant finding and no error.
func TestDoctorWithoutTenantsSaysNothing(t *testing.T) {
	t.Parallel()
	for name, body := range map[string]string{"empty list": `{"tenants":[]}`, "older gateway (404)": ""} {
		n, fs, out := doctorTenantFindings(t, fakeTenantGateway(t, body))
		assert.Zero(t, n, name)
		assert.Empty(t, fs, "%s: %s", name, out)
	}
}

// A GET /tenants that fails otherwise is one warning, not a failed doctor.
func TestDoctorTenantsUnreadableIsAWarning(t *testing.T) {
	t.Parallel()
	srv := fakeTenantGateway(t, `not json`)
	_, fs, out := doctorTenantFindings(t, srv)
	require.Len(t, fs, 1, out)
	assert.Equal(t, "tenants_unreadable", fs[0].Kind)
	assert.Equal(t, "warning", fs[0].Severity)
}
