package e2e_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/domain/wire"
	"github.com/smg-go/smg/test/fleet"
	"github.com/smg-go/smg/test/sim"
)

// Issue #4 item 9: the PD metrics exist with the seed's labels ("Monitoring"): the
// histograms {backend_type, model, runtime}, the selection counter per leg {worker_type,
// connection_mode, model, policy}, in-flight requests per worker {worker}.
func TestSGLangMetricsHaveTheSeedsLabels(t *testing.T) {
	t.Parallel()
	f := sglangFleet(t, 1, 1)
	const n = 3
	for i := 0; i < n; i++ {
		r := f.Gateway.Post(t, apiChat.path, apiChat.body("count me", 2, i%2 == 1), nil)
		require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
	}
	waitIdle(t, f.Sims()...)
	m := f.Gateway.Metrics(t)
	pd := []string{"backend_type", "pd", "model", model, "runtime", "sglang"}
	for _, name := range []string{"smg_pd_ttft_seconds", "smg_pd_prefill_duration_seconds"} {
		assert.Equal(t, float64(n), m.Sum(name+"_count", pd...), name)
		assert.Equal(t, []string{"backend_type", "model", "runtime"}, m.LabelNames(name+"_count"), name)
	}
	for _, leg := range []string{"prefill", "decode"} {
		assert.Equal(t, float64(n), m.Sum("smg_worker_selection_total", "worker_type", leg, "connection_mode", "http",
			"model", model, "policy", "round_robin"), "selections of the %s leg", leg)
	}
	assert.Equal(t, []string{"connection_mode", "model", "policy", "worker_type"}, m.LabelNames("smg_worker_selection_total"))
	for _, s := range f.Sims() {
		assert.True(t, m.Has("smg_worker_requests_active", "worker", s.URL()), "active gauge of %s", s.URL())
		assert.Zero(t, m.Sum("smg_worker_requests_active", "worker", s.URL()), "nothing left in flight")
	}
	assert.True(t, m.Has("smg_pd_bootstrap_failures_total"))
	assert.Zero(t, m.Sum("smg_pd_bootstrap_failures_total"))
}

// A /generate body without a model (SGLang's native API needs none) is counted under the
// model the fleet serves, so the seed's `sum by (le, model)` names it; no series carries
// an empty model.
func TestGenerateWithoutModelIsCountedUnderTheServedModel(t *testing.T) {
	t.Parallel()
	f := sglangFleet(t, 1, 1)
	body := apiGenerate.body("whose model", 2, false)
	delete(body, "model")
	r := f.Gateway.Post(t, apiGenerate.path, body, nil)
	require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
	waitIdle(t, f.Sims()...)
	m := f.Gateway.Metrics(t)
	for _, name := range []string{"smg_pd_ttft_seconds_count", "smg_pd_prefill_duration_seconds_count", "smg_worker_selection_total"} {
		assert.False(t, m.Has(name, "model", ""), "%s with an empty model", name)
	}
	assert.Equal(t, 1.0, m.Sum("smg_pd_ttft_seconds_count", "model", model))
	assert.Equal(t, 1.0, m.Sum("smg_pd_prefill_duration_seconds_count", "model", model))
	assert.Equal(t, 2.0, m.Sum("smg_worker_selection_total", "model", model), "both legs")
}

// Issue #4 item 7: a model no worker serves is refused with 404 model_not_found in the
// seed's error shape with X-SMG-Error-Code, and no engine is contacted.
func TestSGLangUnknownModelIs404(t *testing.T) {
	t.Parallel()
	f := sglangFleet(t, 1, 1)
	for _, a := range generationAPIs {
		body := a.body("hello", 2, false)
		body["model"] = "no-such-model"
		r := f.Gateway.Post(t, a.path, body, nil)
		assert.Equal(t, http.StatusNotFound, r.Status, a.path)
		assert.Equal(t, wire.CodeModelNotFound, r.Header.Get(wire.HeaderErrorCode), a.path)
		assert.Equal(t, "application/json", r.Header.Get("Content-Type"), a.path)
		assert.JSONEq(t, `{"error":{"type":"invalid_request_error","code":"model_not_found",
			"message":"No worker available for model 'no-such-model'","param":null}}`, string(r.Body), a.path)
	}
	assert.Zero(t, fleet.SumStats(f.Sims()...).Requests, "no engine contacted")
}

// Issue #4 item 7: /v1/messages/count_tokens goes to one prefill worker, byte for byte, without
// bootstrap fields and without a decode leg; embeddings and classification answer 501.
func TestSGLangCountTokensAndUnsupportedAPIs(t *testing.T) {
	t.Parallel()
	pre := fleet.NewRecorder(t, "sglang", model, func(w http.ResponseWriter, _ *http.Request, _ []byte) {
		fleet.WriteJSON(w, http.StatusOK, `{"input_tokens":7}`)
	})
	dec := fleet.NewRecorder(t, "sglang", model, nil)
	g := fleet.StartGateway(t, fleet.DefaultConfig())
	g.Register(t, map[string]any{"url": pre.URL, "worker_type": "prefill", "runtime_type": "sglang", "bootstrap_port": 8998})
	g.Register(t, map[string]any{"url": dec.URL, "worker_type": "decode", "runtime_type": "sglang"})
	g.WaitWorkers(t, 2)

	body := `{"model":"sim-model","messages":[{"role":"user","content":"how many tokens?"}],"zz":1}`
	r := g.Post(t, wire.PathCountTokens, body, nil)
	require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
	assert.JSONEq(t, `{"input_tokens":7}`, string(r.Body))
	got := pre.Requests()
	require.Len(t, got, 1)
	assert.Equal(t, wire.PathCountTokens, got[0].Path)
	assert.Equal(t, body, string(got[0].Body), "sent as is: no bootstrap fields")
	assert.Empty(t, dec.Requests(), "no decode leg")

	for _, p := range []string{"/v1/embeddings", "/v1/classify"} {
		r := g.Post(t, p, `{"model":"sim-model","input":"x"}`, nil)
		assert.Equal(t, http.StatusNotImplemented, r.Status, p)
		assert.Equal(t, wire.CodeNotSupported, r.Header.Get(wire.HeaderErrorCode), p)
		e := decodeError(t, r)
		assert.Equal(t, "invalid_request_error", e.Error.Type, p)
		assert.Contains(t, e.Error.Message, p+" is not supported in PD mode", p)
	}
	for _, rt := range []struct{ method, path string }{
		{http.MethodGet, "/v1/responses/resp_1"}, {http.MethodDelete, "/v1/responses/resp_1"},
		{http.MethodPost, "/v1/responses/resp_1/cancel"}, {http.MethodGet, "/v1/responses/resp_1/input_items"},
	} {
		req, err := http.NewRequest(rt.method, g.URL+rt.path, nil)
		require.NoError(t, err)
		r, err := g.Do(req)
		require.NoError(t, err)
		assert.Equal(t, http.StatusNotImplemented, r.Status, rt.path)
		assert.Equal(t, wire.CodeNotSupported, r.Header.Get(wire.HeaderErrorCode), rt.path)
		assert.Contains(t, decodeError(t, r).Error.Message, "stored response", rt.path)
	}
	r = g.Post(t, "/v1/no-such-route", `{}`, nil)
	assert.Equal(t, http.StatusNotFound, r.Status)
	assert.Equal(t, wire.CodeNotFound, r.Header.Get(wire.HeaderErrorCode))
	assert.Equal(t, "invalid_request_error", decodeError(t, r).Error.Type)
	r = g.Get(t, "/v1/chat/completions")
	assert.Equal(t, http.StatusMethodNotAllowed, r.Status)
	assert.Equal(t, wire.CodeMethodNotAllowed, r.Header.Get(wire.HeaderErrorCode))
	assert.Equal(t, "POST", r.Header.Get("Allow"))
	assert.Len(t, pre.Requests(), 1, "unsupported APIs reach no engine")
	assert.Empty(t, dec.Requests())
}

// Issue #4 item 1: with no healthy decode, the request is refused with 503
// no_available_workers naming the leg.
func TestSGLangNoDecodeIs503NamingTheLeg(t *testing.T) {
	t.Parallel()
	pre := fleet.StartSim(t, sim.Config{Engine: sim.EngineSGLang, Role: sim.RolePrefill})
	g := fleet.StartGateway(t, fleet.DefaultConfig())
	g.Register(t, fleet.WorkerSpec(pre))
	g.WaitWorkersHealthy(t, 1)
	r := g.Post(t, apiChat.path, apiChat.body("hi", 2, false), nil)
	require.Equal(t, http.StatusServiceUnavailable, r.Status, "%s", r.Body)
	assert.Equal(t, wire.CodeNoAvailableWorkers, r.Header.Get(wire.HeaderErrorCode))
	assert.Contains(t, decodeError(t, r).Error.Message, "decode")
	assert.Zero(t, pre.Stats().Requests)
}
