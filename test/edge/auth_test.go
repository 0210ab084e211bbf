package edge_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/app/config"
	"github.com/smg-go/smg/test/fleet"
	"github.com/smg-go/smg/test/sim"
)

const (
	adminKey = "adm-0123456789"
	dataKey  = "data-0123456789"
)

func bearer(key string) http.Header { return http.Header{"Authorization": {"Bearer " + key}} }

// get sends GET path with hdr.
func get(t *testing.T, g *fleet.Gateway, path string, hdr http.Header) *fleet.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, g.URL+path, nil)
	require.NoError(t, err)
	for k, vs := range hdr {
		req.Header[k] = vs
	}
	r, err := g.Do(req)
	require.NoError(t, err)
	return r
}

func del(t *testing.T, g *fleet.Gateway, path string, hdr http.Header) *fleet.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodDelete, g.URL+path, nil)
	require.NoError(t, err)
	for k, vs := range hdr {
		req.Header[k] = vs
	}
	r, err := g.Do(req)
	require.NoError(t, err)
	return r
}

type workerList struct {
	Workers []struct {
		ID     string `json:"id"`
		URL    string `json:"url"`
		Status string `json:"status"`
	} `json:"workers"`
}

func listWorkers(t *testing.T, g *fleet.Gateway) workerList {
	t.Helper()
	r := get(t, g, "/workers", bearer(adminKey))
	require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
	var l workerList
	require.NoError(t, json.Unmarshal(r.Body, &l))
	return l
}

// startKeyed starts an SGLang 1P+1D fleet behind a gateway with both API keys set and
// waits (hang guard 15 s) until both workers are ready.
func startKeyed(t *testing.T, edit func(*config.Config)) *fleet.Gateway {
	t.Helper()
	p := fleet.StartSim(t, sim.Config{Engine: sim.EngineSGLang, Role: sim.RolePrefill, Host: "127.0.0.1"})
	d := fleet.StartSim(t, sim.Config{Engine: sim.EngineSGLang, Role: sim.RoleDecode, Host: "127.0.0.1"})
	cfg := fleet.DefaultConfig()
	bp := p.BootstrapPort()
	cfg.Prefill = []config.PrefillSpec{{URL: p.URL(), BootstrapPort: &bp}}
	cfg.Decode = []string{d.URL()}
	cfg.AdminAPIKey, cfg.APIKey = adminKey, dataKey
	if edit != nil {
		edit(&cfg)
	}
	g := fleet.StartGateway(t, cfg)
	require.Eventually(t, func() bool {
		return get(t, g, "/readiness", nil).Status == http.StatusOK
	}, 15*time.Second, 20*time.Millisecond, "fleet never ready")
	return g
}

func TestAdminRoutesRequireTheAdminKey(t *testing.T) {
	t.Parallel()
	g := startKeyed(t, nil)
	before := listWorkers(t, g)
	require.Len(t, before.Workers, 2)
	id := before.Workers[0].ID
	seedBody := `{"url": "http://prefill-0:8000", "worker_type": "prefill", "kv_connector": "NixlConnector"}`

	for name, hdr := range map[string]http.Header{
		"no key":         nil,
		"wrong key":      bearer("nope"),
		"data key":       bearer(dataKey),
		"key not bearer": {"Authorization": {"Basic " + adminKey}},
	} {
		t.Run(name, func(t *testing.T) {
			for _, r := range []*fleet.Response{
				g.Post(t, "/workers", seedBody, hdr),
				get(t, g, "/workers", hdr),
				get(t, g, "/workers/"+id, hdr),
				del(t, g, "/workers/"+id, hdr),
			} {
				assert.Equal(t, http.StatusUnauthorized, r.Status, "%s", r.Body)
				assert.Equal(t, `Bearer realm="smg"`, r.Header.Get("WWW-Authenticate"))
				var e struct{ Error, Code string }
				require.NoError(t, json.Unmarshal(r.Body, &e), "%s", r.Body)
				assert.Equal(t, "UNAUTHORIZED", e.Code)
				assert.NotContains(t, string(r.Body), adminKey)
			}
		})
	}
	assert.Equal(t, before, listWorkers(t, g), "the fleet is unchanged")

	// With the key, the seed's bodies work as written.
	for _, body := range []string{
		seedBody,
		`{"url": "http://decode-0:8000", "worker_type": "decode", "kv_connector": "NixlConnector"}`,
	} {
		r := g.Post(t, "/workers", body, bearer(adminKey))
		require.Equal(t, http.StatusAccepted, r.Status, "%s", r.Body)
		var acc struct {
			WorkerID string `json:"worker_id"`
		}
		require.NoError(t, json.Unmarshal(r.Body, &acc))
		assert.Equal(t, http.StatusOK, get(t, g, "/workers/"+acc.WorkerID, bearer(adminKey)).Status)
		assert.Equal(t, http.StatusAccepted, del(t, g, "/workers/"+acc.WorkerID, bearer(adminKey)).Status)
	}
}

func TestDataPlaneRequiresTheAPIKeyAndProbesStayOpen(t *testing.T) {
	t.Parallel()
	g := startKeyed(t, nil)
	chat := `{"model":"sim-model","messages":[{"role":"user","content":"hi"}],"max_tokens":2}`
	for name, hdr := range map[string]http.Header{"no key": nil, "wrong key": bearer("nope"), "admin key": bearer(adminKey)} {
		r := g.Post(t, "/v1/chat/completions", chat, hdr)
		assert.Equal(t, http.StatusUnauthorized, r.Status, "%s: %s", name, r.Body)
		assert.Equal(t, "invalid_api_key", r.Header.Get("X-SMG-Error-Code"), name)
		assert.Equal(t, "invalid_api_key", errorCode(t, r.Body), name)
		assert.Equal(t, http.StatusUnauthorized, get(t, g, "/v1/models", hdr).Status, name)
	}
	r := g.Post(t, "/v1/chat/completions", chat, bearer(dataKey))
	assert.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
	assert.Equal(t, http.StatusOK, get(t, g, "/v1/models", bearer(dataKey)).Status)
	for _, p := range []string{"/health", "/liveness", "/readiness", "/metrics"} {
		assert.Equal(t, http.StatusOK, get(t, g, p, nil).Status, "%s stays open", p)
	}
}

func TestRequestIDsAreCheckedAndOnlyConfiguredOnesForwarded(t *testing.T) {
	t.Parallel()
	p := fleet.NewRecorder(t, "sglang", "rec-model", nil)
	d := fleet.NewRecorder(t, "sglang", "rec-model", nil)
	cfg := fleet.DefaultConfig()
	cfg.Prefill = []config.PrefillSpec{{URL: p.URL}}
	cfg.Decode = []string{d.URL}
	g := fleet.StartGateway(t, cfg)
	g.WaitWorkers(t, 2)
	chat := `{"model":"rec-model","messages":[{"role":"user","content":"hi"}],"max_tokens":2}`

	for name, v := range map[string]string{
		"spaces":    "a b",
		"quote":     `a"b`,
		"too long":  strings.Repeat("a", 129),
		"non-ASCII": "idé",
	} {
		for _, h := range []string{"X-Request-Id", "X-Correlation-Id", "Request-Id"} {
			r := g.Post(t, "/v1/chat/completions", chat, http.Header{h: {v}})
			assert.Equal(t, http.StatusBadRequest, r.Status, "%s in %s: %s", name, h, r.Body)
			assert.Equal(t, "invalid_request_id", r.Header.Get("X-SMG-Error-Code"), "%s in %s", name, h)
		}
	}
	assert.Empty(t, d.Requests(), "refused requests reach no engine")

	r := g.Post(t, "/v1/chat/completions", chat, http.Header{
		"X-Request-Id":       {"req-ok_1.2:3"},
		"X-Trace-Id":         {"trace-1"},
		"X-Request-Id-Extra": {"smuggled"},
		"Cookie":             {"session=1"},
	})
	require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
	reqs := d.Requests()
	require.Len(t, reqs, 1)
	h := reqs[0].Header
	assert.Equal(t, "req-ok_1.2:3", h.Get("X-Request-Id"))
	assert.Equal(t, "trace-1", h.Get("X-Trace-Id"), "a configured request-id header is forwarded")
	assert.Empty(t, h.Get("X-Request-Id-Extra"), "an unconfigured request-id look-alike is not")
	assert.Empty(t, h.Get("Cookie"))
}
