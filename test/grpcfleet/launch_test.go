package grpcfleet_test

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/smg-go/smg/app/config"
	"github.com/smg-go/smg/test/fleet"
	"github.com/smg-go/smg/test/sim/grpcsim"
	"github.com/smg-go/smg/test/sim/kvevents"
)

// TestMain checks for leaked goroutines, except the ZMQ PUB writers go-zeromq leaves
// behind a closed publisher (kvevents.LeakedGoroutine).
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreAnyFunction(kvevents.LeakedGoroutine))
}

type workerView struct {
	URL            string            `json:"url"`
	WorkerType     string            `json:"worker_type"`
	ConnectionMode string            `json:"connection_mode"`
	RuntimeType    string            `json:"runtime_type"`
	Status         string            `json:"status"`
	KVConnector    string            `json:"kv_connector"`
	KVRole         string            `json:"kv_role"`
	KVEngineID     string            `json:"kv_engine_id"`
	PDPairing      string            `json:"pd_pairing"`
	BootstrapPort  *int              `json:"bootstrap_port"`
	Labels         map[string]string `json:"labels"`
}

func sims(t *testing.T, cfgs ...grpcsim.Config) []*grpcsim.Server {
	t.Helper()
	out := make([]*grpcsim.Server, len(cfgs))
	for i, c := range cfgs {
		s, err := grpcsim.Start(c)
		require.NoError(t, err)
		t.Cleanup(func() { _ = s.Close() })
		out[i] = s
	}
	return out
}

func port(n int) *int { return &n }

// launch starts the gateway as `smg launch --pd-disaggregation --prefill ... --decode ...
// --model-path meta-llama/Llama-3.1-8B-Instruct` and waits until every worker is ready and
// /readiness is 200; it returns GET /workers keyed by URL.
func launch(t *testing.T, prefills []config.PrefillSpec, decodes []string) map[string]workerView {
	t.Helper()
	cfg := fleet.DefaultConfig()
	cfg.Prefill, cfg.Decode = prefills, decodes
	cfg.ModelPath = "meta-llama/Llama-3.1-8B-Instruct"
	g := fleet.StartGateway(t, cfg)
	n := len(prefills) + len(decodes)
	var views map[string]workerView
	deadline := time.Now().Add(fleet.ReadyTimeout)
	for {
		r := g.Get(t, "/workers")
		require.Equal(t, http.StatusOK, r.Status)
		var l struct {
			Workers []workerView `json:"workers"`
		}
		require.NoError(t, json.Unmarshal(r.Body, &l))
		views = map[string]workerView{}
		ready := 0
		for _, w := range l.Workers {
			views[w.URL] = w
			if w.Status == "ready" {
				ready++
			}
		}
		if ready == n && len(l.Workers) == n && g.Get(t, "/readiness").Status == http.StatusOK {
			return views
		}
		if time.Now().After(deadline) {
			t.Fatalf("gRPC workers not ready within %s: %+v", fleet.ReadyTimeout, l.Workers)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestSeedSGLangGRPCLaunch(t *testing.T) {
	t.Parallel()
	s := sims(t, grpcsim.Config{Engine: grpcsim.EngineSGLang, Role: grpcsim.RolePrefill, MaxRunningRequests: 128},
		grpcsim.Config{Engine: grpcsim.EngineSGLang, Role: grpcsim.RoleDecode, MaxRunningRequests: 64})
	p, d := s[0], s[1]
	ws := launch(t, []config.PrefillSpec{{URL: p.URL(), BootstrapPort: port(p.BootstrapPort())}}, []string{d.URL()})
	key := "sglang/mooncake/dtype=auto,page=16,attn=flashinfer"
	for _, w := range ws {
		assert.Equal(t, "grpc", w.ConnectionMode, w.URL)
		assert.Equal(t, "sglang", w.RuntimeType, w.URL)
		assert.Equal(t, key, w.PDPairing, w.URL)
		assert.Equal(t, grpcsim.SGLangVersion, w.Labels["version"], w.URL)
	}
	assert.Equal(t, "prefill", ws[p.URL()].WorkerType)
	assert.Equal(t, p.BootstrapPort(), *ws[p.URL()].BootstrapPort)
	assert.Equal(t, "64", ws[d.URL()].Labels["max_running_requests"], "the decode's admission window")
	assert.Equal(t, "32768", ws[d.URL()].Labels["context_length"])
}

func TestSeedVLLMNixlGRPCLaunch(t *testing.T) {
	t.Parallel()
	s := sims(t, grpcsim.Config{Engine: grpcsim.EngineVLLM, Role: grpcsim.RolePrefill, EngineID: "p0"},
		grpcsim.Config{Engine: grpcsim.EngineVLLM, Role: grpcsim.RoleDecode, EngineID: "d0",
			KVConnector: grpcsim.ConnectorMulti, MultiChildren: []string{grpcsim.ConnectorNixl}})
	ws := launch(t, []config.PrefillSpec{{URL: s[0].URL()}}, []string{s[1].URL()})
	// The published vLLM servicer reports no KV layout (GetServerInfo fields 11-14).
	key := "vllm/nixl/?"
	for _, w := range ws {
		assert.Equal(t, "grpc", w.ConnectionMode)
		assert.Equal(t, "vllm", w.RuntimeType)
		assert.Equal(t, "NixlConnector", w.KVConnector, "the MultiConnector decode is reported as its NIXL child")
		assert.Equal(t, key, w.PDPairing, w.URL)
		assert.NotContains(t, w.Labels, "version", "vLLM reports no version")
	}
	assert.Equal(t, "p0", ws[s[0].URL()].KVEngineID)
	assert.Equal(t, "kv_consumer", ws[s[1].URL()].KVRole)
	assert.Equal(t, "kv_producer", ws[s[0].URL()].KVRole)
}

func TestSeedVLLMMooncakeGRPCLaunch(t *testing.T) {
	t.Parallel()
	mc := func(role, id string) grpcsim.Config {
		return grpcsim.Config{Engine: grpcsim.EngineVLLM, Role: role, EngineID: id, KVConnector: grpcsim.ConnectorMooncake}
	}
	s := sims(t, mc(grpcsim.RolePrefill, "p0"), mc(grpcsim.RolePrefill, "p1"), mc(grpcsim.RoleDecode, "d0"))
	ws := launch(t, []config.PrefillSpec{{URL: s[0].URL(), BootstrapPort: port(8998)}, {URL: s[1].URL(), BootstrapPort: port(8999)}},
		[]string{s[2].URL()})
	for _, w := range ws {
		assert.Equal(t, "vllm", w.RuntimeType)
		assert.Equal(t, "MooncakeConnector", w.KVConnector)
		assert.True(t, strings.HasPrefix(w.PDPairing, "vllm/mooncake/"), w.PDPairing)
	}
	assert.Equal(t, 8999, *ws[s[1].URL()].BootstrapPort)
	assert.Equal(t, "p1", ws[s[1].URL()].KVEngineID)
}

func TestSeedTokenSpeedGRPCLaunch(t *testing.T) {
	t.Parallel()
	s := sims(t, grpcsim.Config{Engine: grpcsim.EngineTokenSpeed, Role: grpcsim.RolePrefill},
		grpcsim.Config{Engine: grpcsim.EngineTokenSpeed, Role: grpcsim.RoleDecode, MaxNumSeqs: 12})
	ws := launch(t, []config.PrefillSpec{{URL: s[0].URL(), BootstrapPort: port(s[0].BootstrapPort())}}, []string{s[1].URL()})
	for _, w := range ws {
		assert.Equal(t, "tokenspeed", w.RuntimeType)
		assert.Equal(t, "tokenspeed/mooncake/dtype=auto,attn=flashinfer", w.PDPairing, w.URL)
	}
	assert.Equal(t, "12", ws[s[1].URL()].Labels["max_num_seqs"])
}

// A vLLM prefill restarted without a pinned engine id comes back with a new one; after it
// recovers, GET /workers shows (and handoffs would be minted with) the new id.
func TestRestartedVLLMPrefillEngineIDIsReReadAfterRecovery(t *testing.T) {
	t.Parallel()
	mc := func(role, id string, port int) grpcsim.Config {
		return grpcsim.Config{Engine: grpcsim.EngineVLLM, Role: role, EngineID: id, Port: port, KVConnector: grpcsim.ConnectorMooncake}
	}
	s := sims(t, mc(grpcsim.RolePrefill, "before", 0), mc(grpcsim.RoleDecode, "d", 0))
	p := s[0]
	url, pport := p.URL(), p.Port()
	cfg := fleet.DefaultConfig()
	cfg.Prefill, cfg.Decode = []config.PrefillSpec{{URL: url, BootstrapPort: port(8998)}}, []string{s[1].URL()}
	g := fleet.StartGateway(t, cfg)
	view := func() workerView {
		r := g.Get(t, "/workers")
		var l struct {
			Workers []workerView `json:"workers"`
		}
		require.NoError(t, json.Unmarshal(r.Body, &l))
		for _, w := range l.Workers {
			if w.URL == url {
				return w
			}
		}
		return workerView{}
	}
	require.Eventually(t, func() bool { w := view(); return w.Status == "ready" && w.KVEngineID == "before" }, fleet.ReadyTimeout, 20*time.Millisecond)
	_ = p.Close()
	require.Eventually(t, func() bool { return view().Status == "not_ready" }, fleet.ReadyTimeout, 20*time.Millisecond)
	sims(t, mc(grpcsim.RolePrefill, "after", pport))
	require.Eventually(t, func() bool { return view().Status == "ready" }, fleet.ReadyTimeout, 20*time.Millisecond)
	assert.Equal(t, "after", view().KVEngineID)
}

func TestPostWorkersWithGRPCURLs(t *testing.T) {
	t.Parallel()
	s := sims(t, grpcsim.Config{Engine: grpcsim.EngineTokenSpeed, Role: grpcsim.RolePrefill},
		grpcsim.Config{Engine: grpcsim.EngineTokenSpeed, Role: grpcsim.RoleDecode})
	g := fleet.StartGateway(t, fleet.DefaultConfig())
	g.Register(t, map[string]any{"url": s[0].URL(), "worker_type": "prefill", "bootstrap_port": s[0].BootstrapPort()})
	g.Register(t, map[string]any{"url": s[1].URL(), "worker_type": "decode", "runtime_type": "tokenspeed"})
	g.WaitWorkers(t, 2)
	for _, w := range g.Workers(t) {
		assert.Equal(t, "tokenspeed", w.RuntimeType, w.URL)
	}

}

// A TensorRT-LLM or MLX gRPC prefill and decode are registered (the gateway does not speak
// their services, so they are kept ready with the registered facts, unprobed), and a PD
// request that selects them answers 400 runtime_pd_not_supported (seed "Supported
// Engines", "Error Codes") before any leg is contacted.
func TestGRPCPDOnRuntimeWithoutPDAnswers400(t *testing.T) {
	t.Parallel()
	for _, rt := range []string{"trtllm", "mlx"} {
		t.Run(rt, func(t *testing.T) {
			t.Parallel()
			g := fleet.StartGateway(t, fleet.DefaultConfig())
			for i, role := range []string{"prefill", "decode"} {
				r := g.Post(t, "/workers", map[string]any{"url": "grpc://127.0.0.1:" + strconv.Itoa(i+1), "worker_type": role, "runtime_type": rt}, nil)
				require.Less(t, r.Status, 300, "%s", r.Body)
			}
			g.WaitUntil(t, "both workers ready", func(ws []fleet.WorkerInfo) bool {
				return len(ws) == 2 && ws[0].Status == "ready" && ws[1].Status == "ready"
			})
			r := g.Post(t, "/v1/chat/completions", map[string]any{"model": pdModel, "max_tokens": 2,
				"messages": []map[string]string{{"role": "user", "content": "hi"}}}, nil)
			require.Equal(t, http.StatusBadRequest, r.Status, "%s", r.Body)
			assert.Equal(t, "runtime_pd_not_supported", errCode(t, r))
			assert.Contains(t, string(r.Body), "runtime "+rt+" has no PD protocol")
		})
	}
}
