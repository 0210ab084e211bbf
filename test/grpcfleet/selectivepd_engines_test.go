package grpcfleet_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/fx"

	"github.com/smg-go/smg/app/config"
	"github.com/smg-go/smg/domain/text"
	"github.com/smg-go/smg/ports"
	"github.com/smg-go/smg/test/fleet"
	"github.com/smg-go/smg/test/sim/grpcsim"
)

// spdPair is one gRPC PD pair registered through POST /workers behind a gateway with
// selective PD: engine and connector of both sims, the decode's kv_role as the engine
// reports it (vLLM GetServerInfo) and a kv_role label claimed on registration (which must
// not make a SGLang or TokenSpeed decode capable).
type spdPair struct {
	engine, connector, kvRole string
	labelBoth                 bool
	decodeFaults              []string
	itl                       time.Duration
	// prefillKVRole, prefillLabelBoth and prefillMods are the same for the prefill.
	prefillKVRole    string
	prefillLabelBoth bool
	prefillMods      []func(*grpcsim.Config)
}

// start registers the pair behind a gateway (cfgMod adjusts it) and returns the gateway,
// the sims and the gateway's worker store (the in-flight counters live there).
func (sp spdPair) start(t *testing.T, cfgMod func(*config.Config)) (*fleet.Gateway, *grpcsim.Server, *grpcsim.Server, ports.WorkerStore) {
	t.Helper()
	m, dir := qwen3(t)
	mk := func(role string) grpcsim.Config {
		c := grpcsim.Config{Engine: sp.engine, Role: role, Model: pdModel, TokenizerPath: dir, KVConnector: sp.connector}
		if role == grpcsim.RoleDecode {
			c.KVRole, c.Faults, c.ITL = sp.kvRole, sp.decodeFaults, sp.itl
		} else {
			c.KVRole = sp.prefillKVRole
			for _, m := range sp.prefillMods {
				m(&c)
			}
		}
		return c
	}
	s := sims(t, mk(grpcsim.RolePrefill), mk(grpcsim.RoleDecode))
	cfg := fleet.DefaultConfig()
	if cfgMod != nil {
		cfgMod(&cfg)
	}
	var store ports.WorkerStore
	g := fleet.StartGateway(t, cfg, fx.Populate(&store), fx.Decorate(func(r *text.Registry) *text.Registry { r.Put(pdModel, m); return r }))
	pre := map[string]any{"url": s[0].URL(), "worker_type": "prefill", "bootstrap_port": s[0].BootstrapPort(), "runtime_type": sp.engine}
	if sp.prefillLabelBoth {
		pre["labels"] = map[string]string{"kv_role": "kv_both"}
	}
	g.Register(t, pre)
	dec := map[string]any{"url": s[1].URL(), "worker_type": "decode", "runtime_type": sp.engine}
	if sp.labelBoth {
		dec["labels"] = map[string]string{"kv_role": "kv_both"}
	}
	g.Register(t, dec)
	g.WaitWorkers(t, 2)
	return g, s[0], s[1], store
}

// idsFrom is n prompt token ids starting at base (distinct bases share no cached prefix).
func idsFrom(base, n int) []uint32 {
	ids := make([]uint32, n)
	for i := range ids {
		ids[i] = uint32(base + i)
	}
	return ids
}

// assertNoInFlight waits until no worker of store holds a request or a token.
func assertNoInFlight(t *testing.T, store ports.WorkerStore) {
	t.Helper()
	require.Eventually(t, func() bool {
		for _, w := range store.List() {
			if w.Load() != 0 || w.TokenLoad() != 0 {
				return false
			}
		}
		return true
	}, faultBound, 10*time.Millisecond, "in-flight requests or tokens left")
}

// Each engine and connector gets only the request shapes it can serve: with a threshold
// every prompt is under, a kv_both vLLM decode (NIXL or Mooncake) takes the request alone
// (decode_only_requests, no prefill leg); a SGLang or TokenSpeed decode (even labelled
// kv_both) and a kv_consumer vLLM decode never receive a decode-only request: the request
// goes through the pair with its handoff, decided no_local_worker.
func TestSelectivePDShapesPerEngineOverGRPC(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		pair  spdPair
		alone bool
	}{
		{"vllm nixl kv_both", spdPair{engine: grpcsim.EngineVLLM, connector: grpcsim.ConnectorNixl, kvRole: "kv_both"}, true},
		{"vllm mooncake kv_both", spdPair{engine: grpcsim.EngineVLLM, connector: grpcsim.ConnectorMooncake, kvRole: "kv_both"}, true},
		{"vllm nixl kv_consumer", spdPair{engine: grpcsim.EngineVLLM, connector: grpcsim.ConnectorNixl, kvRole: "kv_consumer"}, false},
		{"sglang labelled kv_both", spdPair{engine: grpcsim.EngineSGLang, labelBoth: true}, false},
		{"tokenspeed labelled kv_both", spdPair{engine: grpcsim.EngineTokenSpeed, labelBoth: true}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			g, p, d, store := tc.pair.start(t, func(c *config.Config) { c.SelectivePD.UncachedTokens = 1 << 20 })
			const n = 3
			for i := range n {
				body := map[string]any{"model": pdModel, "prompt": idsFrom(1000+100*i, 20), "max_tokens": 3, "stream": i%2 == 1}
				r := g.Post(t, "/v1/completions", body, nil)
				require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
			}
			ds := d.Stats()
			if tc.alone {
				assert.EqualValues(t, n, ds.DecodeOnlyRequests, "every request served by the decode alone")
				assert.Zero(t, p.Stats().Requests, "no prefill leg")
				assert.Zero(t, ds.HandoffsReceived)
				assert.EqualValues(t, n, metric(t, g, `smg_pd_decisions_total{decision="decode_only",reason="uncached_below_threshold"}`))
			} else {
				assert.Zero(t, ds.DecodeOnlyRequests, "no decode-only request reached this decode")
				handoffClean(t, p, d, n)
				assert.EqualValues(t, n, metric(t, g, `smg_pd_decisions_total{decision="disaggregated",reason="no_local_worker"}`))
			}
			assertNoInFlight(t, store)
		})
	}
}

// The threshold at its edges over gRPC: a prompt of N uncached tokens (token ids, counted
// exactly) goes to the kv_both decode alone; N+1 goes through the pair with its handoff.
func TestSelectivePDThresholdEdgesOverGRPC(t *testing.T) {
	t.Parallel()
	const threshold = 24
	pair := spdPair{engine: grpcsim.EngineVLLM, connector: grpcsim.ConnectorNixl, kvRole: "kv_both"}
	g, p, d, store := pair.start(t, func(c *config.Config) { c.SelectivePD.UncachedTokens = threshold })
	post := func(base, n int) {
		r := g.Post(t, "/v1/completions", map[string]any{"model": pdModel, "prompt": idsFrom(base, n), "max_tokens": 2}, nil)
		require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
	}
	post(2000, threshold)
	assert.EqualValues(t, 1, d.Stats().DecodeOnlyRequests, "N uncached tokens: decode-only")
	assert.Zero(t, p.Stats().Requests)
	post(3000, threshold+1)
	ps, ds := p.Stats(), d.Stats()
	assert.EqualValues(t, 1, ds.DecodeOnlyRequests, "N+1: no new decode-only request")
	assert.EqualValues(t, 1, ps.HandoffsSent, "N+1 through the pair")
	assert.EqualValues(t, 1, ds.HandoffsReceived)
	assert.EqualValues(t, 1, ds.RecomputedPrompts, "only the decode-only request computed its prompt on the decode")
	assert.EqualValues(t, 1, metric(t, g, `smg_pd_decisions_total{decision="decode_only",reason="uncached_below_threshold"}`))
	assert.EqualValues(t, 1, metric(t, g, `smg_pd_decisions_total{decision="disaggregated",reason="uncached_above_threshold"}`))
	assertNoInFlight(t, store)
}

// A decode-only request cancelled by its client mid-stream: the decode's RPC is aborted,
// nothing is left in flight (requests and tokens) on any worker, the prefill never saw it.
func TestSelectivePDClientCancelLeavesNothingInFlightOverGRPC(t *testing.T) {
	t.Parallel()
	pair := spdPair{engine: grpcsim.EngineVLLM, connector: grpcsim.ConnectorNixl, kvRole: "kv_both", itl: 20 * time.Millisecond}
	g, p, d, store := pair.start(t, func(c *config.Config) { c.SelectivePD.UncachedTokens = 1 << 20 })
	for i := range 3 {
		ctx, cancel := context.WithTimeout(context.Background(), faultBound)
		resp := g.Open(t, ctx, "/v1/completions", map[string]any{"model": pdModel, "prompt": idsFrom(4000+100*i, 16), "max_tokens": 200, "stream": true})
		require.Equal(t, http.StatusOK, resp.StatusCode)
		buf := make([]byte, 64)
		_, err := resp.Body.Read(buf) // the stream is under way
		require.NoError(t, err)
		start := time.Now()
		cancel()
		_ = resp.Body.Close()
		require.Eventually(t, func() bool { return d.Stats().Aborted == int64(i+1) }, faultBound, 10*time.Millisecond,
			"the decode's RPC is aborted: %+v", d.Stats())
		assert.Less(t, time.Since(start), faultBound)
	}
	assert.EqualValues(t, 3, d.Stats().DecodeOnlyRequests)
	assert.Zero(t, p.Stats().Requests, "no prefill leg")
	assertNoInFlight(t, store)
}

// A kv_both decode failing a decode-only request, before its first output (status) and
// mid-stream (die-after): the client gets the decode's error (blamed on the decode, its
// breaker counts it), no retry (retries off), and nothing is left in flight.
func TestSelectivePDDecodeFaultLeavesNothingInFlightOverGRPC(t *testing.T) {
	t.Parallel()
	t.Run("refused", func(t *testing.T) {
		t.Parallel()
		pair := spdPair{engine: grpcsim.EngineVLLM, connector: grpcsim.ConnectorNixl, kvRole: "kv_both", decodeFaults: []string{"status:503"}}
		g, p, d, store := pair.start(t, func(c *config.Config) { c.SelectivePD.UncachedTokens = 1 << 20; c.DisableRetries = true })
		start := time.Now()
		r := g.Post(t, "/v1/completions", map[string]any{"model": pdModel, "prompt": idsFrom(5000, 16), "max_tokens": 4}, nil)
		assert.Less(t, time.Since(start), faultBound)
		require.Equal(t, http.StatusServiceUnavailable, r.Status, "%s", r.Body)
		assert.True(t, strings.HasPrefix(errCode(t, r), "decode_"), "blamed on the decode: %s", r.Body)
		assert.EqualValues(t, 1, d.Stats().DecodeOnlyRequests)
		assert.Zero(t, p.Stats().Requests, "no prefill leg")
		assert.EqualValues(t, 1, cbOutcomes(t, g, strings.TrimPrefix(d.URL(), "grpc://"), "failure"))
		assert.Zero(t, cbOutcomes(t, g, strings.TrimPrefix(p.URL(), "grpc://"), "failure"))
		assertNoInFlight(t, store)
	})
	t.Run("dies mid-stream", func(t *testing.T) {
		t.Parallel()
		pair := spdPair{engine: grpcsim.EngineVLLM, connector: grpcsim.ConnectorNixl, kvRole: "kv_both", decodeFaults: []string{"die-after:3"}}
		g, p, d, store := pair.start(t, func(c *config.Config) { c.SelectivePD.UncachedTokens = 1 << 20; c.DisableRetries = true })
		r := g.Post(t, "/v1/completions", map[string]any{"model": pdModel, "prompt": idsFrom(6000, 16), "max_tokens": 8, "stream": true}, nil)
		require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
		events, _ := sseData(t, r.Body)
		require.NotEmpty(t, events)
		e, ok := events[len(events)-1]["error"].(map[string]any)
		require.True(t, ok, "the last event is the in-stream error: %s", r.Body)
		assert.Equal(t, "decode_stream_failed", e["code"])
		assert.EqualValues(t, 1, d.Stats().Requests, "no retry after the commit")
		assert.Zero(t, p.Stats().Requests, "no prefill leg")
		require.Eventually(t, func() bool { return cbOutcomes(t, g, strings.TrimPrefix(d.URL(), "grpc://"), "failure") == 1 },
			faultBound, 20*time.Millisecond, "the decode's breaker counts the broken stream")
		assertNoInFlight(t, store)
	})
}
