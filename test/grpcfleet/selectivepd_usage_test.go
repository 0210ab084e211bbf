package grpcfleet_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/app/config"
	"github.com/smg-go/smg/test/fleet"
	"github.com/smg-go/smg/test/sim/grpcsim"
)

// kvBothFleet is a vLLM PD pair whose decode is kv_both, behind a gateway sending prompts
// of at most n uncached tokens to that decode alone.
func kvBothFleet(t *testing.T, n int) (*fleet.Gateway, *grpcsim.Server, *grpcsim.Server) {
	t.Helper()
	return pdFleet(t, grpcsim.EngineVLLM, func(role string, c *grpcsim.Config) {
		if role == grpcsim.RoleDecode {
			c.KVRole = "kv_both"
		}
	}, func(c *config.Config) { c.SelectivePD.UncachedTokens = n })
}

// A decode-only request has no prefill leg, so no prefill result: the usage the client
// gets (a stream's include_usage chunk, a body's usage, every n>1 choice, logprobs) is the
// decode's own prompt count and its completion tokens, and the request is not read as a
// silent recompute.
func TestDecodeOnlyUsageOverGRPC(t *testing.T) {
	t.Parallel()
	const q = "a short prompt served alone"
	for _, tc := range []struct {
		name    string
		body    map[string]any
		choices int
	}{
		{"stream with include_usage", map[string]any{"stream": true, "stream_options": map[string]any{"include_usage": true}}, 1},
		{"non-streaming", map[string]any{}, 1},
		{"n>1 streamed with usage", map[string]any{"n": 2, "stream": true, "stream_options": map[string]any{"include_usage": true}}, 2},
		{"n>1", map[string]any{"n": 2}, 2},
		{"logprobs streamed with usage", map[string]any{"logprobs": true, "top_logprobs": 2, "stream": true, "stream_options": map[string]any{"include_usage": true}}, 1},
		{"logprobs", map[string]any{"logprobs": true, "top_logprobs": 2}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			g, p, d := kvBothFleet(t, 4096)
			ids := chatPrompt(t, q)
			body := map[string]any{"model": pdModel, "max_tokens": 3, "messages": []map[string]string{{"role": "user", "content": q}}}
			for k, v := range tc.body {
				body[k] = v
			}
			r := g.Post(t, "/v1/chat/completions", body, nil)
			require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
			var usage map[string]any
			if body["stream"] == true {
				evs, done := sseData(t, r.Body)
				require.True(t, done, "%s", r.Body)
				last := evs[len(evs)-1]
				require.Contains(t, last, "usage", "%s", r.Body)
				usage = last["usage"].(map[string]any)
			} else {
				b := r.Object(t)
				require.Len(t, b["choices"], tc.choices)
				if tc.body["logprobs"] == true {
					lp := b["choices"].([]any)[0].(map[string]any)["logprobs"].(map[string]any)["content"].([]any)
					assert.Len(t, lp, 3, "one logprob per completion token")
				}
				usage = b["usage"].(map[string]any)
			}
			assert.EqualValues(t, len(ids), usage["prompt_tokens"], "the prompt counted once")
			assert.EqualValues(t, 3*tc.choices, usage["completion_tokens"])
			assert.Zero(t, p.Stats().Requests, "no prefill leg")
			assert.EqualValues(t, 1, d.Stats().Requests, "one request on the decode")
			assert.EqualValues(t, 1, metric(t, g, `smg_pd_decisions_total{decision="decode_only",reason="uncached_below_threshold"}`))
			assert.LessOrEqual(t, metric(t, g, "smg_pd_recomputed_prompts_total"), 0.0, "no silent recompute counted")
		})
	}
}

// The prompt's counts of a decode-only request are the decode's: the same prompt again
// finds part of it in the decode's own cache, and usage says so (cached_tokens, streamed
// and not), as it would say the prefill's under PD.
func TestDecodeOnlyCachedTokensAreTheDecodesOverGRPC(t *testing.T) {
	t.Parallel()
	for _, stream := range []bool{false, true} {
		t.Run(map[bool]string{false: "body", true: "stream"}[stream], func(t *testing.T) {
			t.Parallel()
			g, p, d := kvBothFleet(t, 4096)
			q := "a prompt long enough to fill a page or two of the decode's own prefix cache, twice"
			ids := chatPrompt(t, q)
			cached := func() float64 {
				body := map[string]any{"model": pdModel, "max_tokens": 2, "messages": []map[string]string{{"role": "user", "content": q}}}
				if stream {
					body["stream"], body["stream_options"] = true, map[string]any{"include_usage": true}
				}
				r := g.Post(t, "/v1/chat/completions", body, nil)
				require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
				var u map[string]any
				if stream {
					evs, done := sseData(t, r.Body)
					require.True(t, done)
					u = evs[len(evs)-1]["usage"].(map[string]any)
				} else {
					u = r.Object(t)["usage"].(map[string]any)
				}
				assert.EqualValues(t, len(ids), u["prompt_tokens"])
				det, _ := u["prompt_tokens_details"].(map[string]any)
				c, _ := det["cached_tokens"].(float64)
				return c
			}
			assert.Zero(t, cached(), "a cold prompt found nothing cached")
			again := cached()
			assert.Positive(t, again, "the decode's cache holds the prompt's pages")
			assert.Less(t, again, float64(len(ids)))
			assert.EqualValues(t, again, d.Stats().CachedTokens, "what the decode found is what usage says")
			assert.Zero(t, p.Stats().Requests, "no prefill leg")
		})
	}
}

// /generate return_logprob on a decode-only request: the prompt's logprobs come from the
// decode (under PD the prefill computes them), so input_token_logprobs are still there.
func TestDecodeOnlyPromptLogprobsOverGRPC(t *testing.T) {
	t.Parallel()
	g, p, _ := kvBothFleet(t, 4096)
	m, _ := qwen3(t)
	q := "generate with prompt logprobs alone"
	ids := m.Tokenizer.Encode(q, false)
	r := g.Post(t, "/generate", map[string]any{"text": q, "return_logprob": true, "top_logprobs_num": 1,
		"sampling_params": map[string]any{"max_new_tokens": 2}}, nil)
	require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
	meta := r.Object(t)["meta_info"].(map[string]any)
	require.Len(t, meta["output_token_logprobs"], 2)
	in, _ := meta["input_token_logprobs"].([]any)
	require.Len(t, in, len(ids), "%s", r.Body)
	for pos, e := range in {
		row := e.([]any)
		if v := grpcsim.PromptLogprob(ids[pos], pos); v == nil {
			assert.Nil(t, row[0], "position %d", pos)
		} else {
			assert.InDelta(t, *v, row[0], 1e-6, "position %d", pos)
		}
		assert.EqualValues(t, ids[pos], row[1])
	}
	assert.Zero(t, p.Stats().Requests, "no prefill leg")
}
