package e2e_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/test/fleet"
	"github.com/smg-go/smg/test/sim"
)

func sglangFleet(t *testing.T, prefills, decodes int) *fleet.Fleet {
	t.Helper()
	return fleet.Start(t, fleet.Spec{Engine: sim.EngineSGLang, Prefills: prefills, Decodes: decodes})
}

// waitIdle waits (hang guard 5 s) until no simulator has a request running or a handoff
// pending: the prefill drains finished and no room was left behind.
func waitIdle(t *testing.T, ss ...*sim.Server) {
	t.Helper()
	require.Eventually(t, func() bool {
		for _, s := range ss {
			if s.Stats().Running != 0 || s.PendingHandoffs() != 0 {
				return false
			}
		}
		return true
	}, 5*time.Second, 5*time.Millisecond, "simulators still busy: %+v", fleet.SumStats(ss...))
}

// Issue #4, Done when: every route, streaming and not: 200, and the decode sims show
// handoffs_received equal to the requests sent, recomputed_prompts 0, unmatched_rooms 0.
func TestSGLangEveryRouteHandsOffTheKV(t *testing.T) {
	t.Parallel()
	f := sglangFleet(t, 2, 2)
	const prompt, maxTokens = "the quick brown fox jumps over the lazy dog", 5
	sent := int64(0)
	for _, a := range generationAPIs {
		for _, stream := range []bool{false, true} {
			name := a.name
			if stream {
				name += "/stream"
			}
			t.Run(name, func(t *testing.T) {
				before := fleet.SumStats(f.Decodes...)
				want := sim.HandoffText(a.simPrompt(prompt), maxTokens)
				if !stream {
					r := f.Gateway.Post(t, a.path, a.body(prompt, maxTokens, false), nil)
					require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
					assert.Equal(t, "application/json", r.Header.Get("Content-Type"))
					assert.Equal(t, want, a.text(t, r.Object(t)), "decode text after a real handoff")
				} else {
					r := f.Gateway.Stream(t, a.path, a.body(prompt, maxTokens, true))
					require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
					assert.Equal(t, "text/event-stream", r.Header.Get("Content-Type"))
					assert.Empty(t, r.Errors(), "no error event in %s", r.Body)
					require.NotEmpty(t, r.Events)
					last := r.Events[len(r.Events)-1]
					if a.done {
						assert.True(t, last.Done(), "stream ends with data: [DONE]: %s", r.Body)
					} else {
						assert.False(t, last.Done(), "no [DONE] appended to a %s stream: %s", a.name, r.Body)
					}
					assert.Equal(t, want, a.streamText(t, r.Events), "streamed decode text after a real handoff")
				}
				sent++
				after := fleet.SumStats(f.Decodes...)
				assert.Equal(t, before.HandoffsReceived+1, after.HandoffsReceived, "handoffs_received")
				assert.Equal(t, before.Requests+1, after.Requests, "decode requests")
			})
		}
	}
	waitIdle(t, f.Sims()...)
	d, p := fleet.SumStats(f.Decodes...), fleet.SumStats(f.Prefills...)
	assert.Equal(t, sent, d.HandoffsReceived, "decode handoffs_received = requests sent")
	assert.Equal(t, sent, p.HandoffsSent, "prefill handoffs_sent = requests sent")
	assert.Zero(t, d.RecomputedPrompts, "recomputed_prompts")
	assert.Zero(t, d.UnmatchedRooms+p.UnmatchedRooms, "unmatched_rooms")
	assert.Zero(t, d.DuplicateRooms+p.DuplicateRooms, "duplicate_rooms")
	assert.Zero(t, d.Errors+p.Errors, "engine errors")
	// round_robin spreads both legs.
	for _, s := range f.Sims() {
		assert.NotZero(t, s.Stats().Requests, "every worker served a leg: %s", s.URL())
	}
}

// /v1/rerank goes through the pair too. The simulator's rerank does no KV handoff (it is
// not generation), so the proof is that both legs were sent and the decode's answer relayed.
func TestSGLangRerankThroughThePair(t *testing.T) {
	t.Parallel()
	f := sglangFleet(t, 1, 1)
	r := f.Gateway.Post(t, "/v1/rerank", map[string]any{"model": model, "query": "what is pd",
		"documents": []string{"prefill decode disaggregation", "a recipe for soup"}}, nil)
	require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
	body := r.Object(t)
	results, ok := body["results"].([]any)
	require.True(t, ok, "%s", r.Body)
	assert.Len(t, results, 2)
	// Without a handoff the decode can answer before the prefill leg reached its engine.
	require.Eventually(t, func() bool { return f.Prefills[0].Stats().Requests == 1 }, 5*time.Second, 5*time.Millisecond, "prefill leg sent")
	assert.Equal(t, int64(1), f.Decodes[0].Stats().Requests, "decode leg sent")
	assert.Zero(t, fleet.SumStats(f.Sims()...).Errors)
}
