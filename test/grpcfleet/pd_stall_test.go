package grpcfleet_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/fx"

	"github.com/smg-go/smg/app/config"
	"github.com/smg-go/smg/domain/text"
	"github.com/smg-go/smg/test/fleet"
	"github.com/smg-go/smg/test/sim/grpcsim"
)

// One gRPC SGLang decode of two wedges (HealthCheck stays healthy) under 16 streaming
// clients with a shared prefix and cache_aware policies; the 60 s run is 15 s here,
// with --stall-floor-secs 1, --stall-timeout-secs 2 and --canary-timeout-secs 2 so the
// stranded requests stay under 10 % of it. The stranded requests are cut (an Abort RPC each) and retried on the healthy
// decode within the stall bound plus the canary deadline (the share under twice the healthy
// median is logged; the liveness benchmark measures it), the hung decode's breaker opened after a failed canary (its
// canary_requests), the engine's 300 s bootstrap timeout was never the detector, and no
// healthy worker's breaker moved.
func TestGRPCHungDecodeFoundByWatchdog(t *testing.T) {
	t.Parallel()
	grpcWedgeRun(t, grpcWedge{
		role: grpcsim.RoleDecode, fault: grpcsim.FaultHang, worst: 15 * time.Second,
		load: fleet.Wedge{Clients: 16, Warm: 2 * time.Second, Run: 15 * time.Second, After: time.Second,
			Path: "/v1/chat/completions", Body: fleet.StallChat(pdModel)},
		gateway: func(c *config.Config) {
			c.StallFloor, c.StallTimeout, c.CanaryTimeout = time.Second, 2*time.Second, 2*time.Second
		},
	})
}

// grpcWedge is one wedge of a gRPC SGLang 2P+2D fleet with cache_aware policies on both
// legs and a 50 ms inter-token latency.
type grpcWedge struct {
	// role and fault: the worker of role the policy preferred during the warm-up gets fault
	// (grpcsim.FaultHang or FaultMalformed) load.After into the run.
	role, fault string
	load        fleet.Wedge
	// worst bounds every request.
	worst time.Duration
	// gateway and sim, when set, edit the configs.
	gateway func(*config.Config)
	sim     func(*grpcsim.Config)
}

// grpcOutcome is what grpcWedgeRun saw beyond the latencies: the culprit's canary_requests
// and breaker state, and the healthy workers' breakers.
type grpcOutcome struct {
	canaries int64
	culprit  string
	healthy  string
}

// grpcWedgeRun runs w and checks the outcome: every request a whole 200 stream within
// w.worst, the other worker of the culprit's leg serves the rest, every leg is ended, the
// culprit is charged (a hung one confirmed by a canary, only the legs in flight when it hung
// reached it, each aborted with an Abort RPC, its breaker open), and no healthy worker's
// breaker moved.
func grpcWedgeRun(t *testing.T, w grpcWedge) (fleet.Liveness, grpcOutcome) {
	m, dir := qwen3(t)
	mk := func(role string) grpcsim.Config {
		c := grpcsim.Config{Engine: grpcsim.EngineSGLang, Role: role, Model: pdModel, TokenizerPath: dir, ITL: 50 * time.Millisecond}
		if w.sim != nil {
			w.sim(&c)
		}
		return c
	}
	s := sims(t, mk(grpcsim.RolePrefill), mk(grpcsim.RolePrefill), mk(grpcsim.RoleDecode), mk(grpcsim.RoleDecode))
	prefills, decodes := s[:2], s[2:]
	cfg := fleet.DefaultConfig()
	for _, p := range prefills {
		cfg.Prefill = append(cfg.Prefill, config.PrefillSpec{URL: p.URL(), BootstrapPort: port(p.BootstrapPort())})
	}
	for _, d := range decodes {
		cfg.Decode = append(cfg.Decode, d.URL())
	}
	cfg.Policy, cfg.PrefillPolicy, cfg.DecodePolicy = "cache_aware", "cache_aware", "cache_aware"
	if w.gateway != nil {
		w.gateway(&cfg)
	}
	g := fleet.StartGateway(t, cfg, fx.Decorate(func(r *text.Registry) *text.Registry { r.Put(pdModel, m); return r }))
	g.WaitWorkers(t, 4)

	ctx, cancel := context.WithTimeout(context.Background(), w.load.Warm+w.load.Run+60*time.Second)
	defer cancel()
	leg := decodes
	if w.role == grpcsim.RolePrefill {
		leg = prefills
	}
	var culprit, other *grpcsim.Server
	var otherBefore int64
	run := g.Wedge(t, ctx, w.load, func() func() error {
		culprit, other = leg[0], leg[1]
		if other.Stats().Requests > culprit.Stats().Requests {
			culprit, other = other, culprit
		}
		otherBefore = other.Stats().Requests
		return func() error { culprit.Reset(); return culprit.SetFault(w.fault) }
	})
	culprit.ClearFaults()

	bad := 0
	for i, sh := range run.Shots {
		ok := sh.Status == http.StatusOK && !strings.Contains(string(sh.Body), `"error"`) &&
			strings.HasSuffix(strings.TrimSpace(string(sh.Body)), "data: [DONE]")
		if !ok {
			bad++
			if bad <= 5 { // the first few; the rest are counted
				t.Errorf("request %d (started %v after the fault, %v): status %d, not a whole clean stream: %v %s",
					i, sh.Start.Sub(run.HungAt).Round(time.Millisecond), sh.Elapsed.Round(time.Millisecond), sh.Status, sh.Err, sh.Body)
			}
		}
	}
	assert.Zero(t, bad, "every request is a whole 200 stream ending with [DONE], no error event")
	l := run.Liveness()
	t.Log(l)
	assert.Less(t, l.Worst, w.worst, "no request waits %v", w.worst)
	// The share under 2× the healthy median is a timing figure: logged here, measured by
	// the liveness benchmark.
	assert.Greater(t, other.Stats().Requests, otherBefore, "the other %s serves the rest", w.role)

	require.Eventually(t, func() bool {
		for _, x := range s {
			if x.Stats().Running != 0 {
				return false
			}
		}
		return true
	}, 10*time.Second, 10*time.Millisecond, "every leg ended")
	st := culprit.Stats()
	mt := g.Metrics(t)
	state := func(url string) float64 {
		ss := mt.Find("smg_worker_cb_state", "worker", url)
		require.Len(t, ss, 1, url)
		return ss[0].Value
	}
	fails := func(url string) float64 {
		return mt.Sum("smg_worker_cb_outcomes_total", "worker", url, "outcome", "failure")
	}
	assert.Positive(t, fails(culprit.URL()), "the culprit %s (fault %s) was charged", w.role, w.fault)
	if w.fault == grpcsim.FaultHang {
		assert.GreaterOrEqual(t, st.CanaryRequests, int64(1), "a canary confirmed the hung %s", w.role)
		stranded := st.Requests - st.CanaryRequests
		assert.Positive(t, stranded, "client legs reached the hung %s before it was suspected", w.role)
		assert.LessOrEqual(t, stranded, int64(w.load.Clients), "only the legs in flight when it hung (one per client)")
		assert.LessOrEqual(t, int64(l.Slow), stranded, "only requests it stranded waited over 15 s")
		assert.GreaterOrEqual(t, st.AbortRPCs, stranded, "each stranded leg got its Abort RPC (%+v)", st)
		assert.Equal(t, st.Requests, st.Aborted, "every leg that reached the hung %s was aborted (%+v)", w.role, st)
		assert.Equal(t, float64(1), state(culprit.URL()), "the hung %s's breaker opened", w.role)
	}
	out := grpcOutcome{canaries: st.CanaryRequests, culprit: fmt.Sprintf("%s, %v failures", fleet.BreakerState(state(culprit.URL())), fails(culprit.URL()))}
	moved, healthy := 0, 0
	for _, x := range s {
		if x == culprit {
			continue
		}
		healthy++
		assert.Equal(t, []float64{0, 0}, []float64{state(x.URL()), fails(x.URL())}, "healthy %s: breaker closed, nothing blamed", x.URL())
		if state(x.URL()) != 0 || fails(x.URL()) != 0 {
			moved++
		}
	}
	out.healthy = fmt.Sprintf("%d of %d moved", moved, healthy)
	return l, out
}

// An open gRPC SGLang prefill breaker past --cb-timeout-duration-secs is closed by canaries
// only (a Generate with the fake bootstrap host, answered without a decode), never by a
// client's answer, even one served to the lone prefill in panic mode:
// --cb-success-threshold passing canaries close it.
func TestGRPCHalfOpenProbesAreCanaries(t *testing.T) {
	t.Parallel()
	g, p, d := pdFleet(t, grpcsim.EngineSGLang, nil, func(c *config.Config) {
		c.DisableRetries, c.CBFailureThreshold, c.CBSuccessThreshold, c.CBTimeout = true, 2, 2, 500*time.Millisecond
	})
	body := map[string]any{"model": pdModel, "prompt": "half open", "max_tokens": 2}
	require.NoError(t, p.SetFault("status:503"))
	for range 2 {
		r := g.Post(t, "/v1/completions", body, nil)
		require.Equal(t, http.StatusServiceUnavailable, r.Status, "%s", r.Body)
	}
	p.ClearFaults()
	state := func(url string) float64 {
		ss := g.Metrics(t).Find("smg_worker_cb_state", "worker", url)
		require.Len(t, ss, 1, url)
		return ss[0].Value
	}
	require.Equal(t, float64(1), state(p.URL()), "two failures opened the prefill's breaker")
	before, sent := p.Stats().Requests, p.Stats().HandoffsSent
	// The lone prefill is in panic mode: a client's request still goes to it, and its
	// success does not move the open breaker (only canaries do).
	r := g.Post(t, "/v1/completions", body, nil)
	require.Equal(t, http.StatusOK, r.Status, "panic mode: %s", r.Body)
	require.Equal(t, float64(1), state(p.URL()), "a panic-mode success leaves the breaker open")

	require.Eventually(t, func() bool { return state(p.URL()) == 0 }, 10*time.Second, 20*time.Millisecond,
		"two passing canaries close it")
	st := p.Stats()
	assert.Equal(t, []int64{2, before + 3}, []int64{st.CanaryRequests, st.Requests}, "the panic-mode request and the canaries, nothing else")
	assert.Equal(t, sent+1, st.HandoffsSent, "the panic-mode request's handoff only: a canary needs no decode")
	assert.Zero(t, d.Stats().CanaryRequests)
	r = g.Post(t, "/v1/completions", body, nil)
	require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
}
