package sim_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/test/sim"
)

func TestInfoEndpoints(t *testing.T) {
	t.Parallel()
	sg := start(t, cfgOf(sim.EngineSGLang, sim.RolePrefill, func(c *sim.Config) { c.MaxRunningRequests = 64; c.Model = "m1" }))
	vl := start(t, cfgOf(sim.EngineVLLM, sim.RoleDecode))
	for _, s := range []*sim.Server{sg, vl} {
		h := get(s.URL() + "/health")
		assert.Equal(t, http.StatusOK, h.status)
		assert.Empty(t, h.body)
	}
	models := get(sg.URL() + "/v1/models").json(t)["data"].([]any)[0].(map[string]any)
	assert.Equal(t, "m1", models["id"])
	assert.Equal(t, "sglang", models["owned_by"])
	assert.Equal(t, "vllm", get(vl.URL() + "/v1/models").json(t)["data"].([]any)[0].(map[string]any)["owned_by"])
	assert.Equal(t, map[string]any{"version": sim.VLLMVersion}, get(vl.URL()+"/version").json(t))
	for _, path := range []string{"/get_server_info", "/server_info"} {
		info := get(sg.URL() + path).json(t)
		assert.EqualValues(t, 64, info["max_running_requests"], path)
		assert.EqualValues(t, sg.BootstrapPort(), info["disaggregation_bootstrap_port"], path)
		assert.Equal(t, "prefill", info["disaggregation_mode"], path)
	}
	nf := get(sg.URL() + "/version")
	assert.Equal(t, http.StatusNotFound, nf.status)
	assert.JSONEq(t, `{"detail":"Not Found"}`, string(nf.body))
	assert.Equal(t, http.StatusNotFound, get(vl.URL()+"/get_server_info").status)
	assert.Equal(t, map[string]any{"model_path": "m1", "tokenizer_path": "m1", "is_generation": true}, get(sg.URL()+"/get_model_info").json(t))
	boot := get("http://127.0.0.1:" + itoa(sg.BootstrapPort()) + "/health")
	assert.Equal(t, "OK", string(boot.body))
	metrics := string(get(vl.URL() + "/metrics").body)
	assert.Contains(t, metrics, `vllm:num_requests_running{model_name="sim-model"} 0`)
	assert.Contains(t, string(get(sg.URL()+"/metrics").body), "sglang:num_running_reqs")
	st := get(vl.URL() + "/sim/stats").json(t)
	for _, k := range []string{"requests", "handoffs_sent", "handoffs_received", "recomputed_prompts", "unmatched_rooms",
		"duplicate_rooms", "aborted", "running", "max_running_seen", "errors"} {
		assert.Contains(t, st, k)
	}
	post(vl.URL()+"/v1/completions", map[string]any{"prompt": "count me"})
	assert.EqualValues(t, 1, get(vl.URL() + "/sim/stats").json(t)["recomputed_prompts"])
	assert.EqualValues(t, 0, post(vl.URL()+"/sim/reset", nil).json(t)["recomputed_prompts"])
	assert.Zero(t, vl.Stats().Requests)
}

func TestSurfaces(t *testing.T) {
	t.Parallel()
	d := start(t, cfgOf(sim.EngineVLLM, sim.RoleDecode))
	chat := sim.ChatPrompt(sim.Message{Role: "system", Content: "sys"}, sim.Message{Role: "user", Content: "hey you"})
	t.Run("messages", func(t *testing.T) {
		body := map[string]any{"model": "sim-model", "system": "sys", "max_tokens": 3,
			"messages": []map[string]any{{"role": "user", "content": "hey you"}}}
		m := post(d.URL()+"/v1/messages", body).json(t)
		assert.Equal(t, "message", m["type"])
		assert.Equal(t, "max_tokens", m["stop_reason"])
		assert.Equal(t, []any{map[string]any{"type": "text", "text": sim.RecomputeText(chat, 3)}}, m["content"])
		assert.Equal(t, map[string]any{"input_tokens": float64(sim.PromptTokens(chat)), "output_tokens": float64(3)}, m["usage"])
		body["stream"] = true
		r := post(d.URL()+"/v1/messages", body)
		assert.Contains(t, string(r.body), "event: message_start\n")
		assert.Contains(t, string(r.body), "event: message_stop\n")
		assert.Equal(t, 3, strings.Count(string(r.body), "event: content_block_delta\n"))
	})
	t.Run("responses", func(t *testing.T) {
		body := map[string]any{"instructions": "sys", "input": "hey you", "max_output_tokens": 2}
		m := post(d.URL()+"/v1/responses", body).json(t)
		assert.Equal(t, "response", m["object"])
		assert.Equal(t, "completed", m["status"])
		out := m["output"].([]any)[0].(map[string]any)["content"].([]any)[0].(map[string]any)
		assert.Equal(t, sim.RecomputeText(chat, 2), out["text"])
		body["stream"] = true
		r := post(d.URL()+"/v1/responses", body)
		assert.Contains(t, string(r.body), "event: response.completed\n")
		assert.Equal(t, 2, strings.Count(string(r.body), "event: response.output_text.delta\n"))
	})
	t.Run("rerank", func(t *testing.T) {
		m := post(d.URL()+"/v1/rerank", map[string]any{"query": "q", "documents": []any{"one", map[string]string{"text": "two"}}, "top_n": 1}).json(t)
		res := m["results"].([]any)
		require.Len(t, res, 1)
		assert.Contains(t, []string{"one", "two"}, res[0].(map[string]any)["document"].(map[string]any)["text"])
	})
	t.Run("chat n=2 with logprobs", func(t *testing.T) {
		m := post(d.URL()+"/v1/chat/completions", map[string]any{"n": 2, "max_tokens": 2, "logprobs": true, "top_logprobs": 2,
			"messages": []map[string]any{{"role": "user", "content": "x"}}}).json(t)
		cs := m["choices"].([]any)
		require.Len(t, cs, 2)
		lp := cs[1].(map[string]any)["logprobs"].(map[string]any)["content"].([]any)
		require.Len(t, lp, 2)
		assert.Len(t, lp[0].(map[string]any)["top_logprobs"], 2)
		assert.EqualValues(t, 2, m["usage"].(map[string]any)["prompt_tokens"], "\"user: x\" is 2 tokens, counted once for n=2")
		assert.EqualValues(t, 4, m["usage"].(map[string]any)["completion_tokens"])
	})
	t.Run("completions logprobs", func(t *testing.T) {
		m := post(d.URL()+"/v1/completions", map[string]any{"prompt": "x", "max_tokens": 3, "logprobs": 1}).json(t)
		lp := m["choices"].([]any)[0].(map[string]any)["logprobs"].(map[string]any)
		assert.Len(t, lp["tokens"], 3)
		assert.Len(t, lp["token_logprobs"], 3)
	})
	t.Run("empty prompt", func(t *testing.T) {
		r := post(d.URL()+"/v1/completions", map[string]any{"prompt": "   "})
		assert.Equal(t, http.StatusBadRequest, r.status)
	})
}

func TestSGLangGenerateLogprobsAndLimits(t *testing.T) {
	t.Parallel()
	p, d := pair(t, sim.EngineSGLang, func(c *sim.Config) { c.MaxModelLen = 5 })
	body := sglangBody(p, uint64(3), map[string]any{"input_ids": []int{7, 8, 9}, "return_logprob": true,
		"sampling_params": map[string]any{"max_new_tokens": 2}})
	pr, dr := both(p.URL()+"/generate", body, d.URL()+"/generate", body)
	for _, r := range []result{pr, dr} {
		meta := r.json(t)["meta_info"].(map[string]any)
		in := meta["input_token_logprobs"].([]any)
		require.Len(t, in, 3)
		assert.Equal(t, []any{nil, float64(7), nil}, in[0])
		assert.Len(t, meta["output_token_logprobs"], len(r.json(t)["output_ids"].([]any)))
	}
	assert.Equal(t, sim.HandoffTextIDs([]int{7, 8, 9}, 2), dr.json(t)["text"])
	long := post(d.URL()+"/generate", sglangBody(p, uint64(4), map[string]any{"text": "a b c d e f"}))
	assert.Equal(t, http.StatusBadRequest, long.status)
	assert.JSONEq(t, `{"error":{"message":"The input (6 tokens) is longer than the model's context length (5 tokens)."}}`, string(long.body))
	var batch []map[string]any
	n2 := post(d.URL()+"/generate", map[string]any{"text": "q", "sampling_params": map[string]any{"n": 2, "max_new_tokens": 1},
		"bootstrap_host": "127.0.0.1", "bootstrap_port": p.BootstrapPort(), "bootstrap_room": []int{1, 2, 3}})
	assert.Equal(t, http.StatusBadRequest, n2.status, "room list must match n")
	assert.Error(t, json.Unmarshal(n2.body, &batch))
}

func itoa(i int) string {
	b, _ := json.Marshal(i)
	return string(b)
}
