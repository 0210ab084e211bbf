package e2e_test

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/test/fleet"
	"github.com/smg-go/smg/test/sim"
)

// usageOf returns prompt_tokens and prompt_tokens_details.cached_tokens of a usage object
// (cached -1 when absent or null).
func usageOf(t *testing.T, u any) (prompt, cached float64) {
	t.Helper()
	m, ok := u.(map[string]any)
	require.True(t, ok, "usage object: %v", u)
	prompt, _ = m["prompt_tokens"].(float64)
	cached = -1
	if d, ok := m["prompt_tokens_details"].(map[string]any); ok {
		if c, ok := d["cached_tokens"].(float64); ok {
			cached = c
		}
	}
	return prompt, cached
}

// Usage in PD is the prefill's view of the prompt: the decode engine counts the whole
// prompt as cached (its KV came through the handoff), so the gateway reports the prefill's
// prompt and cached counts — 0 cached for a cold prompt, the prefill's own prefix-cache hit
// for a warm one — streaming (include_usage) and not, chat and completions, SGLang and vLLM,
// and /generate's meta_info. (The simulator reports no cached count on /v1/messages and
// /v1/responses; the rewrite of their shapes is unit-tested in domain/handoff.)
func TestUsageIsThePrefillsViewOfThePrompt(t *testing.T) {
	t.Parallel()
	for _, engine := range []string{sim.EngineSGLang, sim.EngineVLLM} {
		t.Run(engine, func(t *testing.T) {
			t.Parallel()
			// Blocks of 4 tokens: a chat prompt's leading "user:" alone is no hit, and the
			// prompts below differ within their first block.
			const bs = 4
			f := fleet.Start(t, fleet.Spec{Engine: engine, Prefills: 1, Decodes: 1,
				Sim: func(_ string, _ int, c *sim.Config) { c.BlockSize = bs }})
			for _, c := range []struct {
				a      api
				stream bool
			}{{apiChat, false}, {apiChat, true}, {apiCompletions, false}, {apiCompletions, true}} {
				a, stream := c.a, c.stream
				prompt := fmt.Sprintf("%s-%v usage from the prefill", a.name, stream)
				n := float64(sim.PromptTokens(a.simPrompt(prompt)))
				for _, warm := range []bool{false, true} {
					body := a.body(prompt, 3, stream)
					var u any
					if stream {
						body["stream_options"] = map[string]any{"include_usage": true}
						s := f.Gateway.Stream(t, a.path, body)
						require.Equal(t, http.StatusOK, s.Status, "%s", s.Body)
						for _, ev := range s.Data(t) {
							if ev["usage"] != nil {
								u = ev["usage"]
							}
						}
					} else {
						r := f.Gateway.Post(t, a.path, body, nil)
						require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
						u = r.Object(t)["usage"]
					}
					prompt, cached := usageOf(t, u)
					assert.Equal(t, n, prompt, "%s warm %v stream %v", a.name, warm, stream)
					want := 0.0
					if warm { // the prefill's prefix hit: whole blocks, leaving one token to compute
						want = float64((int(n) - 1) / bs * bs)
					}
					assert.Equal(t, want, cached, "%s warm %v stream %v: the prefill's cached count, not the decode's %v", a.name, warm, stream, n)
				}
			}
			waitIdle(t, f.Sims()...)
			assert.Zero(t, f.Decodes[0].Stats().RecomputedPrompts, "every prompt was handed off")
		})
	}
	t.Run("generate", func(t *testing.T) {
		t.Parallel()
		f := fleet.Start(t, fleet.Spec{Engine: sim.EngineSGLang, Prefills: 1, Decodes: 1})
		r := f.Gateway.Post(t, "/generate", map[string]any{"text": "cold generate", "sampling_params": map[string]any{"max_new_tokens": 2}}, nil)
		require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
		meta, _ := r.Object(t)["meta_info"].(map[string]any)
		require.NotNil(t, meta, "%s", r.Body)
		assert.Equal(t, 0.0, meta["cached_tokens"], "a cold prompt: nothing cached on the prefill")
		assert.Equal(t, float64(sim.PromptTokens("cold generate")), meta["prompt_tokens"])
	})
}

// A usage event the decode engine writes in two pieces is rewritten whole: the relay only
// rewrites complete events.
func TestUsageSplitAcrossEngineWritesIsRewritten(t *testing.T) {
	t.Parallel()
	pre := fleet.NewRecorder(t, "sglang", model, func(w http.ResponseWriter, _ *http.Request, _ []byte) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = w.Write([]byte("data: {\"choices\":[],\"usage\":{\"prompt_tokens\":7,\"completion_tokens\":1,\"total_tokens\":8,\"prompt_tokens_details\":{\"cached_tokens\":2}}}\n\ndata: [DONE]\n\n"))
	})
	dec := fleet.NewRecorder(t, "sglang", model, func(w http.ResponseWriter, _ *http.Request, _ []byte) {
		w.Header().Set("Content-Type", "text/event-stream")
		rc := http.NewResponseController(w)
		_, _ = w.Write([]byte("data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hi\"}}]}\n\ndata: {\"choices\":[],\"usage\":{\"prompt_tok"))
		_ = rc.Flush()
		time.Sleep(50 * time.Millisecond)
		_, _ = w.Write([]byte("ens\":7,\"completion_tokens\":3,\"total_tokens\":10,\"prompt_tokens_details\":{\"cached_tokens\":7}}}\n\ndata: [DONE]\n\n"))
	})
	g := fleet.StartGateway(t, fleet.DefaultConfig())
	g.Register(t, map[string]any{"url": pre.URL, "worker_type": "prefill", "runtime_type": "sglang", "bootstrap_port": 8998})
	g.Register(t, map[string]any{"url": dec.URL, "worker_type": "decode", "runtime_type": "sglang"})
	g.WaitWorkers(t, 2)
	body := apiChat.body("split usage", 3, true)
	body["stream_options"] = map[string]any{"include_usage": true}
	s := g.Stream(t, apiChat.path, body)
	require.Equal(t, http.StatusOK, s.Status, "%s", s.Body)
	assert.Contains(t, string(s.Body), `"usage":{"prompt_tokens":7,"completion_tokens":3,"total_tokens":10,"prompt_tokens_details":{"cached_tokens":2}}`)
	assert.True(t, s.Events[len(s.Events)-1].Done())
}
