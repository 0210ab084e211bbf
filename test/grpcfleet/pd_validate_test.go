package grpcfleet_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/test/sim/grpcsim"
)

// Bad input is refused before any leg with 400 invalid_request in the seed's body shape,
// the message naming the field and carrying no Go internals (type or struct names).
func TestGRPCInputValidation(t *testing.T) {
	t.Parallel()
	g, p, d := pdFleet(t, grpcsim.EngineSGLang, nil, nil)
	user := []map[string]any{{"role": "user", "content": "hi"}}
	cases := []struct {
		name, path string
		body       map[string]any
		want       string
	}{
		{"prompt ids out of vocab", "/v1/completions", map[string]any{"model": pdModel, "prompt": []int{99999999}, "max_tokens": 2}, "'prompt'"},
		{"input_ids out of vocab", "/generate", map[string]any{"input_ids": []int{99999999}, "sampling_params": map[string]any{"max_new_tokens": 2}}, "'input_ids'"},
		{"empty messages", "/v1/chat/completions", map[string]any{"model": pdModel, "messages": []any{}, "max_tokens": 2}, "'messages'"},
		{"messages not an array", "/v1/chat/completions", map[string]any{"model": pdModel, "messages": "hi", "max_tokens": 2}, "'messages'"},
		{"unknown role", "/v1/chat/completions", map[string]any{"model": pdModel, "messages": []map[string]any{{"role": "wizard", "content": "hi"}}, "max_tokens": 2}, "'messages[0].role'"},
		{"max_tokens 0", "/v1/chat/completions", map[string]any{"model": pdModel, "messages": user, "max_tokens": 0}, "'max_tokens'"},
		{"max_tokens negative", "/v1/chat/completions", map[string]any{"model": pdModel, "messages": user, "max_tokens": -5}, "Invalid value for field 'max_tokens': expected a non-negative integer"},
		{"max_completion_tokens 0", "/v1/chat/completions", map[string]any{"model": pdModel, "messages": user, "max_completion_tokens": 0}, "'max_completion_tokens'"},
		{"max_tokens string", "/v1/completions", map[string]any{"model": pdModel, "prompt": "x", "max_tokens": "ten"}, "Invalid value for field 'max_tokens': expected a non-negative integer"},
		{"max_new_tokens 0", "/generate", map[string]any{"text": "x", "sampling_params": map[string]any{"max_new_tokens": 0}}, "'sampling_params.max_new_tokens'"},
		{"temperature negative", "/v1/chat/completions", map[string]any{"model": pdModel, "messages": user, "max_tokens": 2, "temperature": -0.5}, "'temperature'"},
		{"temperature above 2", "/v1/completions", map[string]any{"model": pdModel, "prompt": "x", "max_tokens": 2, "temperature": 2.5}, "'temperature'"},
		{"top_p 0", "/v1/chat/completions", map[string]any{"model": pdModel, "messages": user, "max_tokens": 2, "top_p": 0}, "'top_p'"},
		{"top_p above 1", "/v1/completions", map[string]any{"model": pdModel, "prompt": "x", "max_tokens": 2, "top_p": 1.5}, "'top_p'"},
		{"top_k below -1", "/v1/chat/completions", map[string]any{"model": pdModel, "messages": user, "max_tokens": 2, "top_k": -2}, "'top_k'"},
		{"generate top_k below -1", "/generate", map[string]any{"text": "x", "sampling_params": map[string]any{"max_new_tokens": 2, "top_k": -3}}, "'sampling_params.top_k'"},
	}
	for _, c := range cases {
		r := g.Post(t, c.path, c.body, nil)
		require.Equal(t, http.StatusBadRequest, r.Status, "%s: %s", c.name, r.Body)
		assert.Equal(t, "invalid_request", errCode(t, r), c.name)
		e := r.Object(t)["error"].(map[string]any)
		msg, _ := e["message"].(string)
		assert.Contains(t, msg, c.want, c.name)
		assert.Equal(t, "invalid_request_error", e["type"], c.name)
		for _, leak := range []string{"Go ", "struct", "uint32", "int32", "float32", "<nil>", "clientBody", "knobs", "chat template: chat template"} {
			assert.NotContains(t, msg, leak, c.name)
		}
	}
	assert.Zero(t, p.Stats().Requests, "no prefill dispatch")
	assert.Zero(t, d.Stats().Requests, "no decode dispatch")

	// The bounds admit their edges: max_tokens 1, temperature 0 and 2, top_p 1, top_k -1.
	for _, knob := range []map[string]any{{"temperature": 0}, {"temperature": 2}, {"top_p": 1}, {"top_k": -1}, {"top_k": 0}} {
		b := map[string]any{"model": pdModel, "messages": user, "max_tokens": 1}
		for k, v := range knob {
			b[k] = v
		}
		r := g.Post(t, "/v1/chat/completions", b, nil)
		assert.Equal(t, http.StatusOK, r.Status, "%v: %s", knob, r.Body)
	}
}

// /v1/completions asking for the prompt's logprobs (echo with logprobs) is refused with 501
// not_supported before any leg instead of a 200 without them; echo alone and logprobs
// alone are served.
func TestGRPCCompletionsEchoLogprobsRefused(t *testing.T) {
	t.Parallel()
	g, p, d := pdFleet(t, grpcsim.EngineSGLang, nil, nil)
	for _, stream := range []bool{false, true} {
		r := g.Post(t, "/v1/completions", map[string]any{"model": pdModel, "prompt": "echo me", "max_tokens": 2, "echo": true, "logprobs": 1, "stream": stream}, nil)
		require.Equal(t, http.StatusNotImplemented, r.Status, string(r.Body))
		assert.Equal(t, "not_supported", errCode(t, r))
		assert.Contains(t, r.Object(t)["error"].(map[string]any)["message"], "echo")
	}
	assert.Zero(t, p.Stats().Requests+d.Stats().Requests, "no leg contacted")
	r := g.Post(t, "/v1/completions", map[string]any{"model": pdModel, "prompt": "echo me", "max_tokens": 2, "echo": true}, nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	text := r.Object(t)["choices"].([]any)[0].(map[string]any)["text"].(string)
	assert.True(t, len(text) > len("echo me") && text[:len("echo me")] == "echo me", text)
	r = g.Post(t, "/v1/completions", map[string]any{"model": pdModel, "prompt": "echo me", "max_tokens": 2, "logprobs": 1}, nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
}
