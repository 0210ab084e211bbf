package cli_test

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/fx"

	"github.com/smg-go/smg/test/fleet"
	"github.com/smg-go/smg/test/sim"
)

type pairFinding struct {
	Kind      string `json:"kind"`
	Severity  string `json:"severity"`
	PrefillID string `json:"prefill_id"`
	DecodeID  string `json:"decode_id"`
	Message   string `json:"message"`
}

// The Done-when on loopback simulators: a vLLM NIXL pair whose decode drops the
// handoff (no-kv-params), a Mooncake prefill registered without kv_engine_id, and a healthy
// NIXL pair. `smg doctor --probe-requests` names both recomputing pairs (and no other), the
// recompute counter moves for their decodes by the prompt tokens recomputed, the WARN names
// each pair, and the healthy pair moves nothing.
func TestDoctorProbeRequestsNamesThePairsThatRecompute(t *testing.T) {
	t.Parallel()
	nixlP := fleet.StartSim(t, sim.Config{Engine: sim.EngineVLLM, Role: sim.RolePrefill, KVConnector: sim.ConnectorNixl})
	dropD := fleet.StartSim(t, sim.Config{Engine: sim.EngineVLLM, Role: sim.RoleDecode, KVConnector: sim.ConnectorNixl,
		Faults: []string{sim.FaultNoKVParams}})
	goodD := fleet.StartSim(t, sim.Config{Engine: sim.EngineVLLM, Role: sim.RoleDecode, KVConnector: sim.ConnectorNixl})
	mcP := fleet.StartSim(t, sim.Config{Engine: sim.EngineVLLM, Role: sim.RolePrefill, KVConnector: sim.ConnectorMooncake})
	mcD := fleet.StartSim(t, sim.Config{Engine: sim.EngineVLLM, Role: sim.RoleDecode, KVConnector: sim.ConnectorMooncake})
	logs := &fleet.LockedBuffer{}
	g := fleet.StartGateway(t, fleet.DefaultConfig(), fx.Decorate(func(*slog.Logger) *slog.Logger {
		return slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}))
	ids := map[*sim.Server]string{}
	for _, s := range []*sim.Server{nixlP, dropD, goodD, mcD} {
		ids[s] = g.Register(t, fleet.WorkerSpec(s))
	}
	ids[mcP] = g.Register(t, map[string]any{"url": mcP.URL(), "worker_type": "prefill", "runtime_type": "vllm",
		"kv_connector": "MooncakeConnector", "bootstrap_port": mcP.BootstrapPort()}) // no kv_engine_id
	g.WaitWorkersHealthy(t, 5)

	code, out, errOut := runCLI([]string{"doctor", "--url", g.URL, "--json", "--probe-requests", "--no-health-probe"}, nil)
	assert.Equal(t, 1, code, errOut+out)
	var rep struct {
		Findings []pairFinding `json:"findings"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &rep), out)
	var recompute [][2]string
	for _, f := range rep.Findings {
		if strings.HasPrefix(f.Kind, "pair") {
			require.Equal(t, "pair_recomputes", f.Kind, "%+v", f)
			assert.Equal(t, "error", f.Severity)
			recompute = append(recompute, [2]string{f.PrefillID, f.DecodeID})
		}
	}
	assert.ElementsMatch(t, [][2]string{{ids[nixlP], ids[dropD]}, {ids[mcP], ids[mcD]}}, recompute, out)

	m := g.Metrics(t)
	nixl := m.Sum("smg_pd_recomputed_prompts_total", "decode", dropD.URL(), "connector", "nixl")
	mc := m.Sum("smg_pd_recomputed_prompts_total", "decode", mcD.URL(), "connector", "mooncake")
	assert.Greater(t, nixl, 16.0, "the probe's prompt spans several KV pages")
	assert.Greater(t, mc, 16.0)
	assert.Zero(t, m.Sum("smg_pd_recomputed_prompts_total", "decode", goodD.URL()), "the healthy pair moves nothing")
	assert.EqualValues(t, 1, dropD.Stats().RecomputedPrompts)
	assert.EqualValues(t, 1, mcD.Stats().RecomputedPrompts)
	assert.Zero(t, goodD.Stats().RecomputedPrompts)
	assert.EqualValues(t, 1, goodD.Stats().HandoffsReceived, "the healthy pair's probe went through the handoff")
	for _, pair := range [][2]*sim.Server{{nixlP, dropD}, {mcP, mcD}} {
		assert.Contains(t, logs.String(), "prefill="+pair[0].URL()+" decode="+pair[1].URL(), "the WARN names the pair")
	}
	assert.NotContains(t, logs.String(), "decode="+goodD.URL())

	// The endpoint itself: the counter moves by exactly the tokens the probe reports
	// recomputed, the whole prompt (the decode reported none cached).
	r := g.Post(t, "/workers/probe-pair", map[string]any{"prefill": nixlP.URL(), "decode": ids[dropD]}, nil)
	require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
	var res struct {
		Outcome          string `json:"outcome"`
		Recomputed       bool   `json:"recomputed"`
		Measured         bool   `json:"measured"`
		Status           int    `json:"status"`
		Connector        string `json:"connector"`
		PromptTokens     int    `json:"prompt_tokens"`
		CachedTokens     int    `json:"cached_tokens"`
		RecomputedTokens int    `json:"recomputed_tokens"`
	}
	require.NoError(t, json.Unmarshal(r.Body, &res))
	assert.Equal(t, "recomputed", res.Outcome)
	assert.True(t, res.Recomputed)
	assert.True(t, res.Measured)
	assert.Equal(t, http.StatusOK, res.Status)
	assert.Equal(t, "nixl", res.Connector)
	assert.Zero(t, res.CachedTokens)
	assert.Equal(t, res.PromptTokens, res.RecomputedTokens)
	assert.Equal(t, nixl+float64(res.RecomputedTokens),
		g.Metrics(t).Sum("smg_pd_recomputed_prompts_total", "decode", dropD.URL(), "connector", "nixl"))

	r = g.Post(t, "/workers/probe-pair", map[string]any{"prefill": ids[nixlP], "decode": ids[goodD]}, nil)
	require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
	require.NoError(t, json.Unmarshal(r.Body, &res))
	assert.Equal(t, "kv_received", res.Outcome)
	assert.False(t, res.Recomputed)
	assert.Equal(t, res.PromptTokens, res.CachedTokens)
	assert.Zero(t, g.Metrics(t).Sum("smg_pd_recomputed_prompts_total", "decode", goodD.URL()))
}

// A gateway older than the doctor (no POST /workers/probe-pair route): no pair is blamed,
// one note says why, and the doctor passes (the vLLM NIXL gRPC fleet has only notes).
func TestDoctorNotesAGatewayThatCannotProbePairs(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/workers" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"workers":[
{"id":"p0","url":"grpc://127.0.0.1:1","model_id":"m","worker_type":"prefill","connection_mode":"grpc","runtime_type":"vllm","kv_connector":"NixlConnector","status":"ready","labels":{"kv_cache_dtype":"auto"}},
{"id":"d0","url":"grpc://127.0.0.1:2","model_id":"m","worker_type":"decode","connection_mode":"grpc","runtime_type":"vllm","kv_connector":"NixlConnector","status":"ready","labels":{"kv_cache_dtype":"auto"}}]}`))
	}))
	t.Cleanup(srv.Close)
	code, out, errOut := runCLI([]string{"doctor", "--url", srv.URL, "--json", "--probe-requests", "--no-health-probe"}, nil)
	assert.Equal(t, 0, code, errOut+out)
	var rep struct {
		Findings []pairFinding `json:"findings"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &rep), out)
	var kinds []string
	for _, f := range rep.Findings {
		kinds = append(kinds, f.Kind)
	}
	assert.Equal(t, []string{"nixl_not_probed_over_grpc", "pairs_not_probed"}, kinds, out)
	assert.Contains(t, rep.Findings[len(rep.Findings)-1].Message, "does not serve POST /workers/probe-pair")
}

// --probe-max-pairs bounds the pairs probed: 2 prefills × 2 decodes with a cap of 3 probes
// three pairs, notes the fourth, and the text output names the note.
func TestDoctorProbesAtMostMaxPairs(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var probed [][2]string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/workers/probe-pair":
			var in struct{ Prefill, Decode string }
			_ = json.NewDecoder(r.Body).Decode(&in)
			mu.Lock()
			probed = append(probed, [2]string{in.Prefill, in.Decode})
			mu.Unlock()
			if in.Decode == "d1" {
				_, _ = w.Write([]byte(`{"outcome":"unmeasured","status":200,"connector":"passthrough"}`))
				return
			}
			_, _ = w.Write([]byte(`{"outcome":"failed","status":502,"error_code":"decode_failed","error":"boom"}`))
		case "/workers":
			_, _ = w.Write([]byte(`{"workers":[
{"id":"p0","url":"grpc://127.0.0.1:1","model_id":"m","worker_type":"prefill","connection_mode":"grpc","runtime_type":"sglang","status":"ready"},
{"id":"p1","url":"grpc://127.0.0.1:2","model_id":"m","worker_type":"prefill","connection_mode":"grpc","runtime_type":"sglang","status":"ready"},
{"id":"d0","url":"grpc://127.0.0.1:3","model_id":"m","worker_type":"decode","connection_mode":"grpc","runtime_type":"sglang","status":"ready"},
{"id":"d1","url":"grpc://127.0.0.1:4","model_id":"m","worker_type":"decode","connection_mode":"grpc","runtime_type":"sglang","status":"ready"}]}`))
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	code, out, errOut := runCLI([]string{"doctor", "--url", srv.URL, "--json", "--probe-requests", "--no-health-probe", "--probe-max-pairs", "3"}, nil)
	assert.Equal(t, 1, code, errOut+out)
	var rep struct {
		Findings []pairFinding `json:"findings"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &rep), out)
	var got []string
	for _, f := range rep.Findings {
		if strings.HasPrefix(f.Kind, "pair") {
			got = append(got, f.Kind+" "+f.PrefillID+" "+f.DecodeID)
		}
	}
	assert.Equal(t, []string{"pair_probe_failed p0 d0", "pair_probe_unmeasured p0 d1", "pair_probe_failed p1 d0", "pairs_not_probed  "}, got, out)
	assert.Len(t, probed, 3)
	assert.NotContains(t, probed, [2]string{"p1", "d1"})

	code, out, _ = runCLI([]string{"doctor", "--url", srv.URL, "--probe-requests", "--no-health-probe", "--probe-max-pairs", "3"}, nil)
	assert.Equal(t, 1, code)
	assert.Contains(t, out, "[pairs_not_probed]: 1 of 4 compatible prefill/decode pairs were not probed")
	assert.Contains(t, out, "ERROR   pair [pair_probe_failed]: prefill p0 (grpc://127.0.0.1:1) → decode d0 (grpc://127.0.0.1:3): the probe request failed with 502 decode_failed: boom")

	code, _, errOut = runCLI([]string{"doctor", "--url", srv.URL, "--probe-max-pairs", "0"}, nil)
	assert.Equal(t, 2, code, errOut)
	assert.Contains(t, errOut, "--probe-max-pairs")
}

// A pair whose decode fails: the probe answers outcome failed with the status and code a
// client would have had, the doctor names the pair (pair_probe_failed), the decode's
// breaker sees the failure (the probe is a real request) and the prefill's does not.
func TestDoctorNamesAPairWhoseProbeFails(t *testing.T) {
	t.Parallel()
	p := fleet.StartSim(t, sim.Config{Engine: sim.EngineVLLM, Role: sim.RolePrefill, KVConnector: sim.ConnectorNixl})
	d := fleet.StartSim(t, sim.Config{Engine: sim.EngineVLLM, Role: sim.RoleDecode, KVConnector: sim.ConnectorNixl,
		Faults: []string{"status:503"}})
	g := fleet.StartGateway(t, fleet.DefaultConfig())
	pid, did := g.Register(t, fleet.WorkerSpec(p)), g.Register(t, fleet.WorkerSpec(d))
	g.WaitWorkersHealthy(t, 2)

	r := g.Post(t, "/workers/probe-pair", map[string]any{"prefill": pid, "decode": did}, nil)
	require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
	var res struct {
		Outcome   string `json:"outcome"`
		Status    int    `json:"status"`
		ErrorCode string `json:"error_code"`
		Measured  bool   `json:"measured"`
	}
	require.NoError(t, json.Unmarshal(r.Body, &res))
	assert.Equal(t, "failed", res.Outcome)
	assert.Equal(t, http.StatusServiceUnavailable, res.Status, "%s", r.Body)
	assert.NotEmpty(t, res.ErrorCode)
	assert.False(t, res.Measured)
	assert.EqualValues(t, 1, p.Stats().Requests, "the prefill leg ran once: no retry on another pair")
	m := g.Metrics(t)
	assert.Equal(t, 1.0, m.Sum("smg_worker_cb_outcomes_total", "worker", d.URL(), "outcome", "failure"), "the decode's breaker saw it")
	assert.Zero(t, m.Sum("smg_worker_cb_outcomes_total", "worker", p.URL(), "outcome", "failure"))

	code, out, errOut := runCLI([]string{"doctor", "--url", g.URL, "--json", "--probe-requests", "--no-health-probe"}, nil)
	assert.Equal(t, 1, code, errOut+out)
	var rep struct {
		Findings []pairFinding `json:"findings"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &rep), out)
	var got []pairFinding
	for _, f := range rep.Findings {
		if strings.HasPrefix(f.Kind, "pair") {
			got = append(got, f)
		}
	}
	require.Len(t, got, 1, out)
	assert.Equal(t, "pair_probe_failed", got[0].Kind)
	assert.Equal(t, [2]string{pid, did}, [2]string{got[0].PrefillID, got[0].DecodeID})
	assert.Contains(t, got[0].Message, "failed with 503")
}
