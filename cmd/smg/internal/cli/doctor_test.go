package cli_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/test/fleet"
	"github.com/smg-go/smg/test/sim"
)

type doctorOut struct {
	OK       bool `json:"ok"`
	Workers  int  `json:"workers"`
	Findings []struct {
		Kind     string `json:"kind"`
		Severity string `json:"severity"`
		WorkerID string `json:"worker_id"`
		Message  string `json:"message"`
	} `json:"findings"`
}

// vllmGateway starts a gateway with a vLLM NIXL prefill and the given decodes (connector per
// decode, "" for none), registered through POST /workers. It returns the gateway and the
// decode worker ids in order.
func vllmGateway(t *testing.T, decodeConnectors ...string) (*fleet.Gateway, []string) {
	t.Helper()
	g := fleet.StartGateway(t, fleet.DefaultConfig())
	p := fleet.NewRecorder(t, "vllm", "m", nil)
	g.Register(t, map[string]any{"url": p.URL, "worker_type": "prefill", "runtime_type": "vllm", "kv_connector": "NixlConnector"})
	var ids []string
	for _, c := range decodeConnectors {
		d := fleet.NewRecorder(t, "vllm", "m", nil)
		body := map[string]any{"url": d.URL, "worker_type": "decode", "runtime_type": "vllm"}
		if c != "" {
			body["kv_connector"] = c
		}
		ids = append(ids, g.Register(t, body))
	}
	g.WaitWorkersHealthy(t, 1+len(decodeConnectors))
	return g, ids
}

// The case: one passthrough vLLM decode and one decode that pairs with nothing. The
// doctor exits 1 and names both, with the reason.
func TestDoctorNamesPassthroughAndUnpairableWorkers(t *testing.T) {
	t.Parallel()
	g, ids := vllmGateway(t, "", "MooncakeConnector")
	passthrough, mooncake := ids[0], ids[1]

	code, out, errOut := runCLI([]string{"doctor", "--url", g.URL, "--json"}, nil)
	assert.Equal(t, 1, code, errOut)
	var rep doctorOut
	require.NoError(t, json.Unmarshal([]byte(out), &rep), out)
	assert.False(t, rep.OK)
	assert.Equal(t, 3, rep.Workers)
	byWorker := map[string][]string{}
	for _, f := range rep.Findings {
		byWorker[f.WorkerID] = append(byWorker[f.WorkerID], f.Kind)
		switch {
		case f.WorkerID == passthrough && f.Kind == "vllm_passthrough":
			assert.Contains(t, f.Message, "recomputes every prompt")
			assert.Equal(t, "error", f.Severity)
		case f.WorkerID == mooncake && f.Kind == "unpairable_leg":
			assert.Contains(t, f.Message, "pairs with no prefill")
			assert.Contains(t, f.Message, "transport (mooncake ≠ nixl)", "the differing component and both values")
		}
	}
	assert.Equal(t, []string{"vllm_passthrough"}, byWorker[passthrough])
	assert.Equal(t, []string{"unpairable_leg"}, byWorker[mooncake])
	assert.Len(t, rep.Findings, 2, "nothing else is wrong: %s", out)

	// The text form names both too.
	code, out, _ = runCLI([]string{"doctor", "--url", g.URL}, nil)
	assert.Equal(t, 1, code)
	assert.Contains(t, out, passthrough)
	assert.Contains(t, out, mooncake)
	assert.Contains(t, out, "[vllm_passthrough]")
	assert.Contains(t, out, "[unpairable_leg]")
}

func TestDoctorPassesAHealthyFleet(t *testing.T) {
	t.Parallel()
	g, _ := vllmGateway(t, "NixlConnector")
	code, out, errOut := runCLI([]string{"doctor", "--url", g.URL, "--json"}, nil)
	assert.Equal(t, 0, code, errOut)
	var rep doctorOut
	require.NoError(t, json.Unmarshal([]byte(out), &rep), out)
	assert.True(t, rep.OK)
	assert.Empty(t, rep.Findings)
}

func TestDoctorFailsWhenTheGatewayCannotBeAsked(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, `{"error":{"code":"unauthorized"}}`, http.StatusUnauthorized)
	}))
	t.Cleanup(srv.Close)
	code, _, errOut := runCLI([]string{"doctor", "--url", srv.URL}, nil)
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "status 401")

	code, _, errOut = runCLI([]string{"doctor", "--url", "ftp://x"}, nil)
	assert.Equal(t, 2, code)
	assert.True(t, strings.Contains(errOut, "--url"), errOut)
	code, _, _ = runCLI([]string{"doctor", "--url", srv.URL, "--pd-pairing-mode", "loose"}, nil)
	assert.Equal(t, 2, code)
}

// --probe-requests sends a tagged one-token prefill to each NIXL prefill: the one that
// answers without kv_transfer_params is named, the healthy one is not.
func TestDoctorProbeFindsANixlPrefillWithoutParams(t *testing.T) {
	t.Parallel()
	f := fleet.Start(t, fleet.Spec{Engine: sim.EngineVLLM, Prefills: 2, Decodes: 1,
		Sim: func(role string, i int, c *sim.Config) {
			if role == sim.RolePrefill && i == 1 {
				c.Faults = []string{sim.FaultNoKVParams}
			}
		}})
	ids := map[string]string{}
	for _, w := range f.Gateway.Workers(t) {
		ids[w.URL] = w.ID
	}
	good, bad := ids[f.Prefills[0].URL()], ids[f.Prefills[1].URL()]
	require.NotEmpty(t, good)
	require.NotEmpty(t, bad)

	// Without the flag no request is sent and nothing is found.
	code, out, errOut := runCLI([]string{"doctor", "--url", f.Gateway.URL, "--json"}, nil)
	assert.Equal(t, 0, code, errOut+out)

	code, out, _ = runCLI([]string{"doctor", "--url", f.Gateway.URL, "--json", "--probe-requests"}, nil)
	assert.Equal(t, 1, code, out)
	var rep doctorOut
	require.NoError(t, json.Unmarshal([]byte(out), &rep), out)
	require.Len(t, rep.Findings, 2, out)
	assert.Equal(t, "nixl_prefill_returns_no_kv_transfer_params", rep.Findings[0].Kind)
	assert.Equal(t, bad, rep.Findings[0].WorkerID)
	assert.NotEqual(t, good, rep.Findings[0].WorkerID)
	// The pair probe (one request through each pair, through the gateway) sees the same
	// prefill's pair recompute; the healthy prefill's pair is not named.
	assert.Equal(t, "pair_recomputes", rep.Findings[1].Kind)
	assert.Contains(t, rep.Findings[1].Message, "prefill "+bad+" ")
	assert.NotContains(t, rep.Findings[1].Message, good)
	assert.Equal(t, int64(2), f.Prefills[0].Stats().Requests, "the healthy prefill got exactly the NIXL probe and its pair's probe")
}

// --probe-requests on a gRPC vLLM NIXL fleet sends no HTTP probe to the grpc:// workers: the
// prefill gets a "not probed over gRPC" note and the doctor exits 0.
func TestDoctorProbeSkipsGRPCWorkers(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/workers/probe-pair" { // the pair received its KV (through the gateway's gRPC pipeline)
			_, _ = w.Write([]byte(`{"outcome":"kv_received","measured":true,"status":200,"prompt_tokens":300,"cached_tokens":300}`))
			return
		}
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
	// The listed workers do not exist: the health probe is off so only the NIXL probe is seen.
	code, out, errOut := runCLI([]string{"doctor", "--url", srv.URL, "--json", "--probe-requests", "--no-health-probe"}, nil)
	assert.Equal(t, 0, code, errOut+out)
	var rep doctorOut
	require.NoError(t, json.Unmarshal([]byte(out), &rep), out)
	assert.True(t, rep.OK, out)
	require.Len(t, rep.Findings, 1, out)
	assert.Equal(t, "nixl_not_probed_over_grpc", rep.Findings[0].Kind)
	assert.Equal(t, "note", rep.Findings[0].Severity)
	assert.Equal(t, "p0", rep.Findings[0].WorkerID)
	assert.NotContains(t, out, "unsupported protocol scheme")

	code, out, _ = runCLI([]string{"doctor", "--url", srv.URL, "--probe-requests", "--no-health-probe"}, nil)
	assert.Equal(t, 0, code, out)
	assert.Contains(t, out, "not probed over gRPC")
}

// One of two decodes dies between the gateway's health probes: the gateway still lists it
// ready, but the doctor probes each worker itself, exits 1 within one probe timeout and names
// the dead decode (and only it).
func TestDoctorProbesEachWorkerAndNamesADeadDecode(t *testing.T) {
	t.Parallel()
	f := fleet.Start(t, fleet.Spec{Engine: sim.EngineVLLM, Prefills: 1, Decodes: 2})
	ids := map[string]string{}
	for _, w := range f.Gateway.Workers(t) {
		ids[w.URL] = w.ID
	}
	dead, alive := ids[f.Decodes[1].URL()], ids[f.Decodes[0].URL()]
	require.NotEmpty(t, dead)
	require.NoError(t, f.Decodes[1].Close())
	for _, w := range f.Gateway.Workers(t) {
		require.Equal(t, "ready", w.Status, "the gateway has not noticed yet: %s", w.ID)
	}

	start := time.Now()
	code, out, errOut := runCLI([]string{"doctor", "--url", f.Gateway.URL, "--json", "--health-check-timeout-secs", "1"}, nil)
	assert.Less(t, time.Since(start), 3*time.Second, "one probe timeout (1 s) plus the gateway request")
	assert.Equal(t, 1, code, errOut+out)
	var rep doctorOut
	require.NoError(t, json.Unmarshal([]byte(out), &rep), out)
	assert.False(t, rep.OK)
	require.Len(t, rep.Findings, 1, out)
	assert.Equal(t, "worker_health_probe_failed", rep.Findings[0].Kind)
	assert.Equal(t, "error", rep.Findings[0].Severity)
	assert.Equal(t, dead, rep.Findings[0].WorkerID)
	assert.NotEqual(t, alive, rep.Findings[0].WorkerID)

	code, out, _ = runCLI([]string{"doctor", "--url", f.Gateway.URL, "--health-check-timeout-secs", "1"}, nil)
	assert.Equal(t, 1, code)
	assert.Contains(t, out, dead)
	assert.Contains(t, out, "[worker_health_probe_failed]")

	// --no-health-probe is the gateway's last view only: nothing is found yet.
	code, out, errOut = runCLI([]string{"doctor", "--url", f.Gateway.URL, "--no-health-probe"}, nil)
	assert.Equal(t, 0, code, errOut+out)
}
