package grpcfleet_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/test/sim/grpcsim"
)

// tokenText is how OpenAI logprobs show token id: its bytes, invalid UTF-8 as U+FFFD.
func tokenText(t *testing.T, id uint32) (string, []any) {
	t.Helper()
	m, _ := qwen3(t)
	b := m.Tokenizer.AppendBytes(nil, []uint32{id}, false)
	ints := make([]any, len(b))
	for i, c := range b {
		ints[i] = float64(c)
	}
	return strings.ToValidUTF8(string(b), "\uFFFD"), ints
}

// assertChatLogprobs checks OpenAI chat logprobs.content entries against the simulator's
// deterministic logprobs of the decode's tokens ids, detokenized with the gateway's tokenizer.
func assertChatLogprobs(t *testing.T, content []any, ids []uint32, top int) {
	t.Helper()
	require.Len(t, content, len(ids))
	for pos, raw := range content {
		e := raw.(map[string]any)
		tok, bytes := tokenText(t, ids[pos])
		assert.Equal(t, tok, e["token"], "position %d", pos)
		assert.Equal(t, bytes, e["bytes"], "position %d", pos)
		assert.InDelta(t, grpcsim.TokenLogprob(ids[pos], pos), e["logprob"], 1e-6, "position %d", pos)
		tops := e["top_logprobs"].([]any)
		altIDs, altVals := grpcsim.TopLogprobs(ids[pos], pos, top)
		require.Len(t, tops, top, "position %d", pos)
		for k, a := range tops {
			tt, _ := tokenText(t, altIDs[k])
			assert.Equal(t, tt, a.(map[string]any)["token"])
			assert.InDelta(t, altVals[k], a.(map[string]any)["logprob"], 1e-6)
		}
	}
}

// assertCompletionLogprobs checks the legacy completions logprobs shape likewise.
func assertCompletionLogprobs(t *testing.T, lp map[string]any, ids []uint32, top int) {
	t.Helper()
	toks, vals, tops := lp["tokens"].([]any), lp["token_logprobs"].([]any), lp["top_logprobs"].([]any)
	require.Len(t, toks, len(ids))
	require.Len(t, vals, len(ids))
	require.Len(t, tops, len(ids))
	for pos, id := range ids {
		tok, _ := tokenText(t, id)
		assert.Equal(t, tok, toks[pos])
		assert.InDelta(t, grpcsim.TokenLogprob(id, pos), vals[pos], 1e-6)
		altIDs, altVals := grpcsim.TopLogprobs(id, pos, top)
		m := tops[pos].(map[string]any)
		for k := range altIDs {
			tt, _ := tokenText(t, altIDs[k])
			assert.InDelta(t, altVals[k], m[tt], 1e-6, "position %d alternative %q", pos, tt)
		}
	}
}

// Output logprobs over gRPC PD: chat logprobs/top_logprobs and completions logprobs map to
// each engine's proto fields (SGLang/TokenSpeed return_logprob + top_logprobs_num, vLLM
// SamplingParams.logprobs) and back into OpenAI's shapes, streaming and not; the token
// strings are the gateway tokenizer's. The simulators return deterministic logprobs.
func TestGRPCLogprobsChatAndCompletions(t *testing.T) {
	t.Parallel()
	const n, top = 4, 2
	for _, tc := range []struct{ name, engine, connector string }{
		{"sglang", grpcsim.EngineSGLang, ""},
		{"tokenspeed", grpcsim.EngineTokenSpeed, ""},
		{"vllm-nixl", grpcsim.EngineVLLM, grpcsim.ConnectorNixl},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			g, p, d := pdFleet(t, tc.engine, func(_ string, c *grpcsim.Config) { c.KVConnector = tc.connector }, nil)
			m, _ := qwen3(t)
			sent := int64(0)
			for _, stream := range []bool{false, true} {
				q := "logprobs please " + tc.name
				if stream {
					q += " streamed"
				}
				want := grpcsim.HandoffTokens(chatPrompt(t, q), n)
				chat := map[string]any{"model": pdModel, "max_tokens": n, "logprobs": true, "top_logprobs": top,
					"messages": []map[string]string{{"role": "user", "content": q}}, "stream": stream}
				r := g.Post(t, "/v1/chat/completions", chat, nil)
				require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
				sent++
				if !stream {
					c := r.Object(t)["choices"].([]any)[0].(map[string]any)
					assertChatLogprobs(t, c["logprobs"].(map[string]any)["content"].([]any), want, top)
				} else {
					events, done := sseData(t, r.Body)
					require.True(t, done)
					var content []any
					for _, e := range events {
						for _, ch := range e["choices"].([]any) {
							if lp, ok := ch.(map[string]any)["logprobs"].(map[string]any); ok {
								content = append(content, lp["content"].([]any)...)
							}
						}
					}
					assertChatLogprobs(t, content, want, top)
				}

				prompt := q + " as a completion"
				wantC := grpcsim.HandoffTokens(m.Tokenizer.Encode(prompt, false), n)
				cmpl := map[string]any{"model": pdModel, "prompt": prompt, "max_tokens": n, "logprobs": top, "stream": stream}
				r = g.Post(t, "/v1/completions", cmpl, nil)
				require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
				sent++
				if !stream {
					c := r.Object(t)["choices"].([]any)[0].(map[string]any)
					assertCompletionLogprobs(t, c["logprobs"].(map[string]any), wantC, top)
					assert.Equal(t, detok(t, wantC), c["text"])
				} else {
					events, done := sseData(t, r.Body)
					require.True(t, done)
					merged := map[string]any{"tokens": []any{}, "token_logprobs": []any{}, "top_logprobs": []any{}}
					for _, e := range events {
						for _, ch := range e["choices"].([]any) {
							lp, ok := ch.(map[string]any)["logprobs"].(map[string]any)
							if !ok {
								continue
							}
							for _, k := range []string{"tokens", "token_logprobs", "top_logprobs"} {
								merged[k] = append(merged[k].([]any), lp[k].([]any)...)
							}
						}
					}
					assertCompletionLogprobs(t, merged, wantC, top)
				}
			}
			// A request without logprobs has none.
			r := g.Post(t, "/v1/completions", map[string]any{"model": pdModel, "prompt": "plain", "max_tokens": 2}, nil)
			require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
			sent++
			assert.Nil(t, r.Object(t)["choices"].([]any)[0].(map[string]any)["logprobs"])
			handoffClean(t, p, d, sent)
		})
	}
}

// Bad logprob knobs are 400s before any leg.
func TestGRPCLogprobsValidation(t *testing.T) {
	t.Parallel()
	g, p, d := pdFleet(t, grpcsim.EngineSGLang, nil, nil)
	msgs := []map[string]string{{"role": "user", "content": "x"}}
	for name, body := range map[string]map[string]any{
		"top_logprobs without logprobs": {"model": pdModel, "messages": msgs, "top_logprobs": 2},
		"top_logprobs over 20":          {"model": pdModel, "messages": msgs, "logprobs": true, "top_logprobs": 21},
		"logprobs not a bool":           {"model": pdModel, "messages": msgs, "logprobs": "yes"},
	} {
		r := g.Post(t, "/v1/chat/completions", body, nil)
		assert.Equal(t, http.StatusBadRequest, r.Status, "%s: %s", name, r.Body)
	}
	r := g.Post(t, "/v1/completions", map[string]any{"model": pdModel, "prompt": "x", "logprobs": 50}, nil)
	assert.Equal(t, http.StatusBadRequest, r.Status, "%s", r.Body)
	assert.Zero(t, p.Stats().Requests+d.Stats().Requests)
}

// /generate return_logprob over gRPC PD (non-streaming): meta_info.input_token_logprobs are
// the prompt's logprobs as the prefill computed them ([logprob|null, id, text], null for
// the first token), output_token_logprobs the decode's. TokenSpeed reports no prompt
// logprobs, so only its output ones are shown.
func TestGRPCGenerateReturnLogprob(t *testing.T) {
	t.Parallel()
	const n = 3
	for _, tc := range []struct {
		name, engine, connector string
		prompt                  bool
	}{
		{"sglang", grpcsim.EngineSGLang, "", true},
		{"vllm-nixl", grpcsim.EngineVLLM, grpcsim.ConnectorNixl, true},
		{"tokenspeed", grpcsim.EngineTokenSpeed, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			g, p, d := pdFleet(t, tc.engine, func(_ string, c *grpcsim.Config) { c.KVConnector = tc.connector }, nil)
			m, _ := qwen3(t)
			q := "generate with logprobs " + tc.name
			ids := m.Tokenizer.Encode(q, false)
			want := grpcsim.HandoffTokens(ids, n)
			r := g.Post(t, "/generate", map[string]any{"text": q, "return_logprob": true, "top_logprobs_num": 1,
				"sampling_params": map[string]any{"max_new_tokens": n}}, nil)
			require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
			meta := r.Object(t)["meta_info"].(map[string]any)
			out := meta["output_token_logprobs"].([]any)
			require.Len(t, out, n)
			for pos, e := range out {
				row := e.([]any)
				tok, _ := tokenText(t, want[pos])
				assert.InDelta(t, grpcsim.TokenLogprob(want[pos], pos), row[0], 1e-6)
				assert.EqualValues(t, want[pos], row[1])
				assert.Equal(t, tok, row[2])
			}
			if !tc.prompt {
				assert.Nil(t, meta["input_token_logprobs"])
				handoffClean(t, p, d, 1)
				return
			}
			in := meta["input_token_logprobs"].([]any)
			require.Len(t, in, len(ids))
			for pos, e := range in {
				row := e.([]any)
				tok, _ := tokenText(t, ids[pos])
				if v := grpcsim.PromptLogprob(ids[pos], pos); v == nil {
					assert.Nil(t, row[0], "position %d", pos)
				} else {
					assert.InDelta(t, *v, row[0], 1e-6, "position %d", pos)
				}
				assert.EqualValues(t, ids[pos], row[1])
				assert.Equal(t, tok, row[2])
			}
			handoffClean(t, p, d, 1)
		})
	}
}
