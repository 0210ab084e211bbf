package resilience_test

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/app/config"
	"github.com/smg-go/smg/test/fleet"
	"github.com/smg-go/smg/test/sim"
)

// hungCase is one fleet of 2 prefills and 2 decodes where one instance hangs on every
// inference request (instance-level --fault hang; its /health keeps answering).
type hungCase struct {
	name     string
	engine   string
	role     string // the hung instance's role
	policy   string
	gw       func(*config.Config)
	simCfg   func(role string, c *sim.Config)
	hitLimit time.Duration // how long a request that hit the hung worker may take
}

// The hung worker is blamed and leaves rotation: every request succeeds (its retry avoids
// the hung worker), a request that hit it ends within its deadline plus 1 s, at most 3
// attempts (--cb-timeout-failure-threshold) reach it before its breaker opens, later
// requests are as fast as on a healthy fleet, every leg paired with it was cancelled, and
// no healthy worker's breaker moves.
func TestHungWorkerLeavesRotation(t *testing.T) {
	t.Parallel()
	const deadline = time.Second
	var cases []hungCase
	for _, pol := range []string{"cache_aware", "round_robin", "power_of_two"} {
		// The gateway's prefill deadline passes first (the engines' own handoff timeout is 30 s).
		cases = append(cases, hungCase{name: "sglang prefill, prefill deadline, " + pol, engine: sim.EngineSGLang,
			role: sim.RolePrefill, policy: pol, hitLimit: deadline + time.Second,
			gw: func(c *config.Config) { c.PrefillTimeout = deadline }})
	}
	cases = append(cases,
		// The decode engine reports the KV handoff failed while the prefill had not answered.
		hungCase{name: "sglang prefill, decode reports the handoff", engine: sim.EngineSGLang, role: sim.RolePrefill,
			policy: "cache_aware", hitLimit: deadline + time.Second,
			simCfg: func(role string, c *sim.Config) {
				if role == sim.RoleDecode {
					c.HandoffTimeout = deadline
				}
			}},
		// The prefill engine reports the decode never claimed its room.
		hungCase{name: "sglang decode, prefill reports the handoff", engine: sim.EngineSGLang, role: sim.RoleDecode,
			policy: "round_robin", hitLimit: deadline + time.Second,
			simCfg: func(role string, c *sim.Config) {
				if role == sim.RolePrefill {
					c.HandoffTimeout = deadline
				}
			}},
		hungCase{name: "vllm decode, decode deadline", engine: sim.EngineVLLM, role: sim.RoleDecode,
			policy: "round_robin", hitLimit: deadline + time.Second,
			gw: func(c *config.Config) { c.DecodeTimeout = deadline }},
		hungCase{name: "vllm prefill, prefill deadline", engine: sim.EngineVLLM, role: sim.RolePrefill,
			policy: "cache_aware", hitLimit: deadline + time.Second,
			gw: func(c *config.Config) { c.PrefillTimeout = deadline }},
	)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			f := fleet.Start(t, fleet.Spec{Engine: c.engine, Prefills: 2, Decodes: 2,
				Gateway: func(g *config.Config) {
					g.Policy, g.PrefillPolicy, g.DecodePolicy = c.policy, c.policy, c.policy
					if c.gw != nil {
						c.gw(g)
					}
				},
				Sim: func(role string, i int, sc *sim.Config) {
					if role == c.role && i == 0 {
						sc.Faults = []string{sim.FaultHang}
					}
					if c.simCfg != nil {
						c.simCfg(role, sc)
					}
				}})
			hung, healthy := f.Prefills[0], append([]*sim.Server{f.Prefills[1]}, f.Decodes...)
			peers := f.Decodes
			if c.role == sim.RoleDecode {
				hung, healthy, peers = f.Decodes[0], append([]*sim.Server{f.Decodes[1]}, f.Prefills...), f.Prefills
			}

			hits := 0
			for i := range 12 {
				before := hung.Stats().Requests
				r := f.Gateway.Post(t, "/v1/chat/completions", chat(fmt.Sprintf("hung fleet %d", i%3), 4, false), nil)
				require.Equal(t, http.StatusOK, r.Status, "request %d: %s", i, r.Body)
				assert.Contains(t, string(r.Body), chatText(fmt.Sprintf("hung fleet %d", i%3), 4), "a real handoff")
				t.Logf("request %d: %v (hung worker hit: %v)", i, r.Elapsed.Round(time.Millisecond), hung.Stats().Requests > before)
				if hung.Stats().Requests > before {
					hits++
					assert.Less(t, r.Elapsed, c.hitLimit, "request %d hit the hung worker: bounded by its deadline", i)
				} else {
					assert.Less(t, r.Elapsed, deadline, "request %d avoided the hung worker: no deadline waited out", i)
				}
			}
			assert.LessOrEqual(t, hung.Stats().Requests, int64(3), "at most 3 attempts reached the hung worker")
			assert.GreaterOrEqual(t, hung.Stats().Requests, int64(1), "the policy did pick it")

			state, ok, fail := cb(t, f.Gateway, hung.URL())
			assert.Equal(t, []float64{0, float64(hung.Stats().Requests)}, []float64{ok, fail}, "every hit counted on the hung worker")
			if hung.Stats().Requests == 3 {
				assert.Equal(t, float64(1), state, "its breaker opened")
			}
			for _, s := range healthy {
				state, _, fail := cb(t, f.Gateway, s.URL())
				assert.Equal(t, []float64{0, 0}, []float64{state, fail}, "healthy %s: breaker closed, nothing blamed", s.URL())
			}
			waitIdle(t, f.Sims()...)
			assert.Equal(t, hung.Stats().Requests, hung.Stats().Aborted, "the gateway cancelled every leg on the hung worker")
			aborted, reported := int64(0), int64(0)
			for _, s := range peers {
				aborted += s.Stats().Aborted
				reported += s.Stats().Errors
			}
			if c.engine == sim.EngineSGLang && c.simCfg == nil {
				assert.Equal(t, hung.Stats().Requests, aborted, "each peer leg was cancelled at the deadline")
			}
			if c.simCfg != nil {
				assert.Equal(t, hung.Stats().Requests, reported, "each peer leg reported the failed handoff itself")
			}
		})
	}
}

// A leg that answers 200 with a malformed body or stream (SGLang, both modes) fails within
// 1 s with that leg's code, cancels the other leg at once, and never waits for the peer's
// handoff timeout; a malformed prefill answer is blamed on the prefill, a malformed decode
// answer on the decode. The fault rides on the request, so a retry on the second prefill
// fails the same way: the request's, counted on one worker only.
func TestMalformedLegFailsFast(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		fault  string
		stream bool
		code   string
		leg    string
	}{
		{"prefill body", "prefill:malformed", false, "prefill_invalid_response", "prefill"},
		{"prefill stream", "prefill:malformed", true, "prefill_invalid_response", "prefill"},
		{"decode body", "decode:malformed", false, "decode_invalid_response", "decode"},
		{"decode stream", "decode:malformed", true, "decode_invalid_response", "decode"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			f := fleet.Start(t, fleet.Spec{Engine: sim.EngineSGLang, Prefills: 2, Decodes: 2,
				Gateway: func(g *config.Config) { g.Policy = "round_robin" }})
			body := chat("garbled "+c.name, 4, c.stream, c.fault)
			var elapsed time.Duration
			if c.stream && c.leg == "decode" {
				s := f.Gateway.Stream(t, "/v1/chat/completions", body)
				elapsed = s.Elapsed
				require.Equal(t, http.StatusOK, s.Status)
				streamError(t, s.Events, "server_error", c.code)
				assert.NotContains(t, string(s.Body), "sim-malformed", "the garbled event is not relayed")
			} else {
				r := f.Gateway.Post(t, "/v1/chat/completions", body, nil)
				elapsed = r.Elapsed
				requireError(t, r, http.StatusBadGateway, c.code)
			}
			t.Logf("%s: answered in %v", c.name, elapsed.Round(time.Millisecond))
			assert.Less(t, elapsed, time.Second, "never waits for the peer's handoff timeout")

			waitIdle(t, f.Sims()...)
			culprits, peers := f.Prefills, f.Decodes
			if c.leg == "decode" {
				culprits, peers = f.Decodes, f.Prefills
			}
			failures := 0.0
			for _, s := range culprits {
				_, _, fail := cb(t, f.Gateway, s.URL())
				failures += fail
			}
			assert.Equal(t, 1.0, failures, "counted on one %s worker only", c.leg)
			for _, s := range peers {
				st := s.Stats()
				assert.Equal(t, st.Requests, st.Aborted, "every peer leg was cancelled: %+v", st)
				assert.Zero(t, st.UnmatchedRooms, "no peer waited out its handoff")
				_, ok, fail := cb(t, f.Gateway, s.URL())
				assert.Equal(t, []float64{0, 0}, []float64{ok, fail}, "the peer is not blamed")
			}
		})
	}
}

// A poisoned request (every prefill answers it 500) is the request's fault, not the
// workers': it is retried once on the other prefill, then answered, and counted on one
// prefill only. 20 of them back to back leave at most one prefill breaker open (the
// ejection cap keeps half the pool in rotation), and a healthy request between them always
// succeeds.
func TestPoisonedRequestCannotTakeALegDown(t *testing.T) {
	t.Parallel()
	f := fleet.Start(t, fleet.Spec{Engine: sim.EngineSGLang, Prefills: 2, Decodes: 2,
		Gateway: func(g *config.Config) { g.Policy = "round_robin" }})
	for i := range 20 {
		r := f.Gateway.Post(t, "/v1/chat/completions", chat(fmt.Sprintf("poison %d", i), 4, false, "prefill:status:500"), nil)
		requireError(t, r, http.StatusInternalServerError, "prefill_upstream_error")
		if i%2 == 1 {
			r := f.Gateway.Post(t, "/v1/chat/completions", chat("healthy", 4, false), nil)
			require.Equal(t, http.StatusOK, r.Status, "healthy request after poison %d: %s", i, r.Body)
		}
	}
	legs, failures, open := int64(0), 0.0, 0
	for _, p := range f.Prefills {
		legs += p.Stats().Errors
		state, _, fail := cb(t, f.Gateway, p.URL())
		failures += fail
		if state == 1 {
			open++
		}
	}
	assert.Equal(t, int64(40), legs, "each poisoned request reached two prefills, then stopped")
	assert.Equal(t, 20.0, failures, "and was counted on one of them")
	assert.LessOrEqual(t, open, 1, "at most one prefill breaker open")
	for _, d := range f.Decodes {
		_, _, fail := cb(t, f.Gateway, d.URL())
		assert.Zero(t, fail, "no decode blamed")
	}

	// Back to back without healthy traffic between them: still at most one open.
	for i := range 20 {
		r := f.Gateway.Post(t, "/v1/chat/completions", chat(fmt.Sprintf("poison again %d", i), 4, false, "prefill:status:500"), nil)
		require.Contains(t, []int{http.StatusInternalServerError}, r.Status, "%s", r.Body)
	}
	open = 0
	for _, p := range f.Prefills {
		if state, _, _ := cb(t, f.Gateway, p.URL()); state == 1 {
			open++
		}
	}
	assert.Equal(t, 1, open, "the cap keeps one prefill in rotation")
	r := f.Gateway.Post(t, "/v1/chat/completions", chat("healthy", 4, false), nil)
	require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
}
