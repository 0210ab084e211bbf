package sim_test

import (
	"encoding/json"
	"net"
	"net/http"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/domain/wire"
	"github.com/smg-go/smg/test/sim"
)

// nixlTag is the prefill-leg tag the toy proxy sends (engines.md §3.1).
var nixlTag = map[string]any{"do_remote_decode": true, "do_remote_prefill": false,
	"remote_engine_id": nil, "remote_block_ids": nil, "remote_host": nil, "remote_port": nil}

type complResp struct {
	Choices []struct {
		Text         string `json:"text"`
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
	Usage struct {
		PromptTokens        int `json:"prompt_tokens"`
		CompletionTokens    int `json:"completion_tokens"`
		PromptTokensDetails struct {
			CachedTokens int `json:"cached_tokens"`
		} `json:"prompt_tokens_details"`
	} `json:"usage"`
	KV map[string]any `json:"kv_transfer_params"`
}

func parseCompl(t *testing.T, r result) complResp {
	t.Helper()
	require.NoError(t, r.err)
	require.Equal(t, http.StatusOK, r.status, "body: %s", r.body)
	var c complResp
	require.NoError(t, json.Unmarshal(r.body, &c))
	return c
}

// nixlPrefill runs a tagged prefill leg and returns the kv_transfer_params it answered.
func nixlPrefill(t *testing.T, p *sim.Server, prompt string) map[string]any {
	t.Helper()
	r := post(p.URL()+"/v1/completions", map[string]any{"model": "sim-model", "prompt": prompt, "max_tokens": 1,
		"stream": false, "kv_transfer_params": nixlTag}, "X-Request-Id", "req-1")
	c := parseCompl(t, r)
	require.NotNil(t, c.KV, "body: %s", r.body)
	return c.KV
}

func TestNixlMatchedHandoff(t *testing.T) {
	t.Parallel()
	p, d := pair(t, sim.EngineVLLM)
	const prompt = "tell me about nixl transfers"
	pr := post(p.URL()+"/v1/completions", map[string]any{"model": "sim-model", "prompt": prompt, "max_tokens": 1,
		"stream": false, "kv_transfer_params": nixlTag, "unknown_field": []int{1}}, "X-Request-Id", "req-1")
	pc := parseCompl(t, pr)
	assert.Equal(t, "req-1", pr.header.Get("X-Request-Id"))
	assert.Equal(t, "length", pc.Choices[0].FinishReason)
	kv := pc.KV
	keys := make([]string, 0, len(kv))
	for k := range kv {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	assert.Equal(t, []string{"do_remote_decode", "do_remote_prefill", "remote_block_ids", "remote_engine_id",
		"remote_host", "remote_port", "remote_request_id", "tp_size"}, keys)
	assert.Equal(t, true, kv["do_remote_prefill"])
	assert.Equal(t, false, kv["do_remote_decode"])
	assert.Equal(t, p.EngineID(), kv["remote_engine_id"])
	assert.Equal(t, "127.0.0.1", kv["remote_host"])
	assert.EqualValues(t, p.Port(), kv["remote_port"])
	assert.EqualValues(t, 1, kv["tp_size"])
	assert.True(t, strings.HasPrefix(kv["remote_request_id"].(string), "cmpl-req-1-"), kv["remote_request_id"])
	assert.Equal(t, []any{[]any{float64(1)}}, kv["remote_block_ids"], "one KV group, one 16-token block")

	dr := post(d.URL()+"/v1/completions", map[string]any{"model": "sim-model", "prompt": prompt, "max_tokens": 6,
		"kv_transfer_params": kv}, "X-Request-Id", "req-1")
	dc := parseCompl(t, dr)
	assert.Equal(t, sim.HandoffText(prompt, 6), dc.Choices[0].Text)
	assert.Equal(t, 5, dc.Usage.PromptTokensDetails.CachedTokens)
	assert.Equal(t, 6, dc.Usage.CompletionTokens)
	assert.Nil(t, dc.KV, "a decode returns kv_transfer_params null")
	assert.Contains(t, string(dr.body), `"kv_transfer_params":null`)
	assert.EqualValues(t, 1, d.Stats().HandoffsReceived)
	assert.EqualValues(t, 1, p.Stats().HandoffsSent)
	assert.Zero(t, d.Stats().RecomputedPrompts)
	eventually(t, func() bool { return p.PendingHandoffs() == 0 }, "handoff state released")
}

func TestNixlChatAndStreamingDecode(t *testing.T) {
	t.Parallel()
	p, d := pair(t, sim.EngineVLLM)
	msgs := []map[string]string{{"role": "user", "content": "stream the handoff"}}
	pr := post(p.URL()+"/v1/chat/completions", map[string]any{"messages": msgs, "max_tokens": 1, "max_completion_tokens": 1,
		"stream": false, "kv_transfer_params": nixlTag})
	require.Equal(t, http.StatusOK, pr.status, "%s", pr.body)
	kv := pr.json(t)["kv_transfer_params"]
	require.NotNil(t, kv)
	dr := post(d.URL()+"/v1/chat/completions", map[string]any{"messages": msgs, "max_tokens": 3, "stream": true,
		"kv_transfer_params": kv})
	events := sseData(t, dr.body)
	require.Len(t, events, 5)
	assert.Equal(t, "[DONE]", events[4])
	var text strings.Builder
	for _, e := range events[1:4] {
		var c struct {
			Choices []struct {
				Delta struct{ Content string } `json:"delta"`
			} `json:"choices"`
		}
		require.NoError(t, json.Unmarshal([]byte(e), &c))
		text.WriteString(c.Choices[0].Delta.Content)
	}
	assert.Equal(t, sim.HandoffText(sim.ChatPrompt(sim.Message{Role: "user", Content: "stream the handoff"}), 3), text.String())
	assert.EqualValues(t, 1, d.Stats().HandoffsReceived)
}

func closedPort(t *testing.T) int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := ln.Addr().(*net.TCPAddr).Port
	require.NoError(t, ln.Close())
	return port
}

func TestNixlDecodeParams(t *testing.T) {
	t.Parallel()
	const prompt = "a b c"
	cases := []struct {
		name      string
		mutate    func(t *testing.T, kv map[string]any) any // returns the decode's kv_transfer_params
		status    int
		msg       string
		recompute bool
	}{
		{name: "absent params recompute", mutate: func(*testing.T, map[string]any) any { return nil }, status: 200, recompute: true},
		{name: "missing remote_block_ids recomputes", mutate: func(_ *testing.T, kv map[string]any) any {
			delete(kv, "remote_block_ids")
			return kv
		}, status: 200, recompute: true},
		{name: "do_remote_prefill false recomputes", mutate: func(_ *testing.T, kv map[string]any) any {
			kv["do_remote_prefill"] = false
			return kv
		}, status: 200, recompute: true},
		{name: "flat block ids (older vLLM) accepted", mutate: func(_ *testing.T, kv map[string]any) any {
			kv["remote_block_ids"] = kv["remote_block_ids"].([]any)[0]
			return kv
		}, status: 200},
		{name: "closed remote_port fails", mutate: func(t *testing.T, kv map[string]any) any {
			kv["remote_port"] = closedPort(t)
			return kv
		}, status: 500, msg: "cannot reach"},
		{name: "wrong remote_host fails", mutate: func(_ *testing.T, kv map[string]any) any {
			kv["remote_host"] = "::1"
			return kv
		}, status: 500, msg: "cannot reach http://[::1]:"},
		{name: "wrong engine id fails", mutate: func(_ *testing.T, kv map[string]any) any {
			kv["remote_engine_id"] = "other-engine"
			return kv
		}, status: 500, msg: `answered 400: remote_engine_id "other-engine" is not this engine`},
		{name: "unknown request id fails", mutate: func(_ *testing.T, kv map[string]any) any {
			kv["remote_request_id"] = "cmpl-nope-0"
			return kv
		}, status: 500, msg: `answered 404: unknown or already consumed remote_request_id "cmpl-nope-0"`},
		{name: "wrong block ids fail", mutate: func(_ *testing.T, kv map[string]any) any {
			kv["remote_block_ids"] = [][]int{{999}}
			return kv
		}, status: 500, msg: "answered 409: remote_block_ids [999] do not match"},
		{name: "remote_port of the wrong type is a 400", mutate: func(_ *testing.T, kv map[string]any) any {
			kv["remote_port"] = "5555"
			return kv
		}, status: 400, msg: `Invalid kv_transfer_params: remote_port has the wrong type: "5555"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p, d := pair(t, sim.EngineVLLM)
			kv := nixlPrefill(t, p, prompt)
			dr := post(d.URL()+"/v1/completions", map[string]any{"prompt": prompt, "max_tokens": 4,
				"kv_transfer_params": tc.mutate(t, kv)})
			require.NoError(t, dr.err)
			require.Equal(t, tc.status, dr.status, "%s", dr.body)
			if tc.status != 200 {
				var e struct {
					Error struct {
						Message string `json:"message"`
						Type    string `json:"type"`
						Code    int    `json:"code"`
					} `json:"error"`
				}
				require.NoError(t, json.Unmarshal(dr.body, &e))
				assert.Contains(t, e.Error.Message, tc.msg)
				assert.Equal(t, tc.status, e.Error.Code)
				assert.Equal(t, map[int]string{400: "BadRequestError", 500: "InternalServerError"}[tc.status], e.Error.Type)
				assert.EqualValues(t, 1, d.Stats().Errors)
				return
			}
			want := sim.HandoffText(prompt, 4)
			if tc.recompute {
				want = sim.RecomputeText(prompt, 4)
				assert.EqualValues(t, 1, d.Stats().RecomputedPrompts)
				assert.Zero(t, d.Stats().HandoffsReceived)
			} else {
				assert.EqualValues(t, 1, d.Stats().HandoffsReceived)
			}
			assert.Equal(t, want, parseCompl(t, dr).Choices[0].Text)
		})
	}
}

func TestNixlBlocksAreSingleUseAndLeased(t *testing.T) {
	t.Parallel()
	t.Run("consumed twice", func(t *testing.T) {
		t.Parallel()
		p, d := pair(t, sim.EngineVLLM)
		kv := nixlPrefill(t, p, "once only")
		body := map[string]any{"prompt": "once only", "kv_transfer_params": kv}
		assert.Equal(t, http.StatusOK, post(d.URL()+"/v1/completions", body).status)
		again := post(d.URL()+"/v1/completions", body)
		assert.Equal(t, http.StatusInternalServerError, again.status)
		assert.Contains(t, string(again.body), "unknown or already consumed")
	})
	t.Run("lease expires without a decode", func(t *testing.T) {
		t.Parallel()
		p, d := pair(t, sim.EngineVLLM, shortTimeout)
		kv := nixlPrefill(t, p, "nobody pulls")
		eventually(t, func() bool { return p.Stats().UnmatchedRooms == 1 }, "lease expiry counted")
		eventually(t, func() bool { return p.PendingHandoffs() == 0 }, "handoff state released")
		late := post(d.URL()+"/v1/completions", map[string]any{"prompt": "nobody pulls", "kv_transfer_params": kv})
		assert.Equal(t, http.StatusInternalServerError, late.status)
	})
	t.Run("blocks whose params never reached the client are freed", func(t *testing.T) {
		t.Parallel()
		p := start(t, cfgOf(sim.EngineVLLM, sim.RolePrefill))
		cut := post(p.URL()+"/v1/completions", map[string]any{"prompt": "x", "max_tokens": 1,
			"kv_transfer_params": nixlTag, "sim_fault": "prefill:die-after:0"})
		require.Error(t, cut.err)
		streamed := post(p.URL()+"/v1/completions", map[string]any{"prompt": "x", "max_tokens": 1, "stream": true,
			"kv_transfer_params": nixlTag})
		require.NoError(t, streamed.err)
		assert.NotContains(t, string(streamed.body), "remote_block_ids")
		eventually(t, func() bool { return p.PendingHandoffs() == 0 }, "blocks freed")
		assert.Zero(t, p.Stats().UnmatchedRooms)
	})
	t.Run("no-kv-params fault", func(t *testing.T) {
		t.Parallel()
		p := start(t, cfgOf(sim.EngineVLLM, sim.RolePrefill))
		r := post(p.URL()+"/v1/completions", map[string]any{"prompt": "x", "max_tokens": 1,
			"kv_transfer_params": nixlTag, "sim_fault": []string{"prefill:no-kv-params", "decode:status:500"}})
		c := parseCompl(t, r)
		assert.Nil(t, c.KV)
		assert.Contains(t, string(r.body), `"kv_transfer_params":null`)
		eventually(t, func() bool { return p.PendingHandoffs() == 0 }, "handoff state released")
	})
}

func TestVLLMErrorShapes(t *testing.T) {
	t.Parallel()
	d := start(t, cfgOf(sim.EngineVLLM, sim.RoleDecode, func(c *sim.Config) { c.MaxModelLen = 3 }))
	cases := []struct {
		name string
		body any
		want string
		code int
	}{
		{"unknown model", map[string]any{"model": "gpt-x", "prompt": "a"}, `{"error":{"message":"The model ` + "`gpt-x`" + ` does not exist.","type":"NotFoundError","param":"model","code":404}}`, 404},
		{"prompt too long", map[string]any{"prompt": "a b c d"}, `{"error":{"message":"This model's maximum context length is 3 tokens. However, your request has 4 input tokens. Please reduce the length of the input messages.","type":"BadRequestError","param":"input_tokens","code":400}}`, 400},
		{"bad json", []byte(`{"prompt":`), `{"error":{"message":"JSON decode error: unexpected end of JSON input","type":"BadRequestError","param":null,"code":400}}`, 400},
		{"injected status", map[string]any{"prompt": "a", "sim_fault": "decode:status:503"}, `{"error":{"message":"sim fault: injected status 503","type":"ServiceUnavailableError","param":null,"code":503}}`, 503},
	}
	for _, tc := range cases {
		r := post(d.URL()+"/v1/completions", tc.body)
		require.NoError(t, r.err)
		assert.Equal(t, tc.code, r.status, tc.name)
		assert.JSONEq(t, tc.want, string(r.body), tc.name)
	}
	assert.EqualValues(t, len(cases), d.Stats().Errors)
}

// A max_tokens that does not fit the context window beside the prompt is the engine's 400
// before anything is allocated (max_tokens > max_model_len - prompt tokens); the largest budget that fits is served and ends
// with finish_reason "length".
func TestMaxTokensOverContextLength(t *testing.T) {
	t.Parallel()
	v := start(t, cfgOf(sim.EngineVLLM, sim.RoleDecode, func(c *sim.Config) { c.MaxModelLen = 64 }))
	for _, body := range []map[string]any{
		{"prompt": "a b c", "max_tokens": 1000000000000},
		{"prompt": "a b c", "max_tokens": 62},
		{"messages": []map[string]any{{"role": "user", "content": "hi"}}, "max_completion_tokens": 1000000000000},
	} {
		path := "/v1/completions"
		if _, ok := body["messages"]; ok {
			path = "/v1/chat/completions"
		}
		r := post(v.URL()+path, body)
		require.NoError(t, r.err)
		require.Equal(t, http.StatusBadRequest, r.status, string(r.body))
		e, _ := r.json(t)["error"].(map[string]any)
		require.NotNil(t, e, string(r.body))
		assert.Contains(t, e["message"], "is too large")
		assert.Contains(t, e["message"], "maximum context length is 64 tokens")
	}
	ok := post(v.URL()+"/v1/completions", map[string]any{"prompt": "a b c", "max_tokens": 61})
	require.Equal(t, http.StatusOK, ok.status, string(ok.body))
	ch, _ := ok.json(t)["choices"].([]any)
	require.Len(t, ch, 1)
	assert.Equal(t, "length", ch[0].(map[string]any)["finish_reason"])

	sg := start(t, cfgOf(sim.EngineSGLang, sim.RoleDecode, func(c *sim.Config) { c.MaxModelLen = 64 }))
	r := post(sg.URL()+"/generate", map[string]any{"text": "a b c", "sampling_params": map[string]any{"max_new_tokens": 1000000000000}})
	require.NoError(t, r.err)
	require.Equal(t, http.StatusBadRequest, r.status, string(r.body))
	assert.Contains(t, string(r.body), "exceeds the model's maximum context length of 64 tokens")
	r = post(sg.URL()+"/v1/completions", map[string]any{"prompt": "a b c", "max_tokens": 1000000000000, "stream": true})
	require.NoError(t, r.err)
	assert.Equal(t, http.StatusBadRequest, r.status, string(r.body))
}

// vLLM refuses an output budget under 1 (SamplingParams: "max_tokens must be at least 1");
// SGLang serves 0 as an empty answer.
func TestMaxTokensZero(t *testing.T) {
	t.Parallel()
	v := start(t, cfgOf(sim.EngineVLLM, sim.RoleDecode))
	r := post(v.URL()+"/v1/completions", map[string]any{"prompt": "a b c", "max_tokens": 0})
	require.NoError(t, r.err)
	assert.Equal(t, http.StatusBadRequest, r.status)
	assert.JSONEq(t, `{"error":{"message":"max_tokens must be at least 1, got 0.","type":"BadRequestError","param":null,"code":400}}`, string(r.body))
	r = post(v.URL()+"/v1/chat/completions", map[string]any{"messages": []map[string]any{{"role": "user", "content": "hi"}}, "max_completion_tokens": 0})
	require.NoError(t, r.err)
	assert.Equal(t, http.StatusBadRequest, r.status, string(r.body))

	sg := start(t, cfgOf(sim.EngineSGLang, sim.RoleDecode))
	r = post(sg.URL()+"/v1/completions", map[string]any{"prompt": "a b c", "max_tokens": 0, "bootstrap_host": wire.FakeBootstrapHost, "bootstrap_room": 1})
	require.NoError(t, r.err)
	require.Equal(t, http.StatusOK, r.status, string(r.body))
	assert.Equal(t, 0, parseCompl(t, r).Usage.CompletionTokens)
}
