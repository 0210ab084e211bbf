package resilience_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/test/fleet"
	"github.com/smg-go/smg/test/sim"
)

// An unmatched room: the prefill is registered with a wrong bootstrap port (another, unused
// prefill's), so the decode waits for a room that is never registered there. The decode
// gives up after its handoff timeout (1 s here) with the engine's KVTransferError while the
// prefill has not answered: the failure is the prefill's (502 prefill_kv_transfer_failed,
// counted on the prefill's breaker, never on the decode's); the gateway cancels the real
// prefill at once — it never waits out its own 20 s. smg_pd_bootstrap_failures_total
// counts the failed rendezvous.
func TestUnmatchedRoom(t *testing.T) {
	t.Parallel()
	pre := fleet.StartSim(t, sim.Config{Engine: sim.EngineSGLang, Role: sim.RolePrefill, HandoffTimeout: 20 * time.Second})
	decoy := fleet.StartSim(t, sim.Config{Engine: sim.EngineSGLang, Role: sim.RolePrefill})
	dec := fleet.StartSim(t, sim.Config{Engine: sim.EngineSGLang, Role: sim.RoleDecode, HandoffTimeout: time.Second})
	cfg := fleet.DefaultConfig()
	cfg.DisableRetries = true
	g := fleet.StartGateway(t, cfg)
	spec := fleet.WorkerSpec(pre)
	spec["bootstrap_port"] = decoy.BootstrapPort()
	g.Register(t, spec)
	g.Register(t, fleet.WorkerSpec(dec))
	g.WaitWorkers(t, 2)

	r := g.Post(t, "/generate", generate("lost room", 4, false), nil)
	assert.Less(t, r.Elapsed, bound, "hang guard: ended by the decode's 1 s handoff timeout")
	assert.Contains(t, requireError(t, r, http.StatusBadGateway, "prefill_kv_transfer_failed"), "KVPoll.WaitingForInput")

	waitIdle(t, pre, dec)
	d := dec.Stats()
	assert.Equal(t, []int64{1, 1, 0}, []int64{d.Requests, d.UnmatchedRooms, d.HandoffsReceived})
	p := pre.Stats()
	assert.Equal(t, []int64{1, 1, 0, 0}, []int64{p.Requests, p.Aborted, p.UnmatchedRooms, p.HandoffsSent}, "the prefill leg was cancelled, not left to its deadline")
	assert.Zero(t, decoy.Stats().Requests)
	_, ok, fail := cb(t, g, pre.URL())
	assert.Equal(t, []float64{0, 1}, []float64{ok, fail}, "the silent prefill is blamed")
	_, ok, fail = cb(t, g, dec.URL())
	assert.Equal(t, []float64{0, 0}, []float64{ok, fail}, "the decode that reported it is not")
	assert.Equal(t, 1.0, g.Metrics(t).Sum("smg_pd_bootstrap_failures_total"), "the room never met is a bootstrap failure")
}

// Retries never reuse a room or transfer id: prefill P0 answers 503 to everything, P1 is
// healthy; round-robin sends every request's first attempt to P0 and its retry to P1 (the
// breaker threshold is raised so P0 stays in rotation). Every request succeeds with a real
// handoff, every leg the two prefills saw carried a different id, and no simulator saw a
// duplicate room.
func TestRetriesNeverReuseAHandoffID(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, engine, connector, path string
	}{
		{"sglang bootstrap_room", sim.EngineSGLang, "", "/generate"},
		{"vllm mooncake transfer_id", sim.EngineVLLM, sim.ConnectorMooncake, "/v1/completions"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			bad := fleet.StartSim(t, sim.Config{Engine: c.engine, Role: sim.RolePrefill, KVConnector: c.connector, Faults: []string{"status:503"}})
			good := fleet.StartSim(t, sim.Config{Engine: c.engine, Role: sim.RolePrefill, KVConnector: c.connector})
			decs := []*sim.Server{
				fleet.StartSim(t, sim.Config{Engine: c.engine, Role: sim.RoleDecode, KVConnector: c.connector}),
				fleet.StartSim(t, sim.Config{Engine: c.engine, Role: sim.RoleDecode, KVConnector: c.connector}),
			}
			cfg := fleet.DefaultConfig()
			cfg.CBFailureThreshold = 1000
			cfg.RetryInitialBackoffMS = 1
			cfg.RetryMaxBackoffMS = 5
			g := fleet.StartGateway(t, cfg)
			proxies := []*legProxy{newLegProxy(t, bad.URL()), newLegProxy(t, good.URL())}
			for i, s := range []*sim.Server{bad, good} {
				spec := fleet.WorkerSpec(s)
				spec["url"] = proxies[i].URL
				g.Register(t, spec)
			}
			for _, d := range decs {
				g.Register(t, fleet.WorkerSpec(d))
			}
			g.WaitWorkers(t, 4)

			const n = 40
			for i := range n {
				var body map[string]any
				if c.engine == sim.EngineSGLang {
					body = generate("retry me", 3, false)
				} else {
					body = map[string]any{"model": "sim-model", "prompt": "retry me", "max_tokens": 3}
				}
				r := g.Post(t, c.path, body, nil)
				require.Equal(t, http.StatusOK, r.Status, "request %d: %s", i, r.Body)
			}
			waitIdle(t, append([]*sim.Server{bad, good}, decs...)...)

			failed, served := proxies[0].IDs(), proxies[1].IDs()
			assert.Len(t, served, n, "each request succeeded once on the healthy prefill")
			assert.NotEmpty(t, failed, "attempts went to the failing prefill and were retried")
			assert.Equal(t, int64(len(failed)), bad.Stats().Errors)
			seen := map[string]bool{}
			for _, id := range append(failed, served...) {
				assert.False(t, seen[id], "handoff id %s reused", id)
				seen[id] = true
			}
			all := fleet.SumStats(bad, good, decs[0], decs[1])
			assert.Zero(t, all.DuplicateRooms)
			assert.Zero(t, all.RecomputedPrompts)
			assert.Equal(t, int64(n), all.HandoffsReceived, "every success was a real handoff")
		})
	}
}
