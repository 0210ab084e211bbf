package grpcfleet_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/test/sim/grpcsim"
)

func TestSGLangGRPCChatCompletion(t *testing.T) {
	t.Parallel()
	// The gateway loads the tokenizer itself, from the workers' tokenizer_path label.
	g, p, d := pdFleetLoading(t, grpcsim.EngineSGLang, nil, nil)
	// The first request parses Qwen3's 11 MB tokenizer.json: tens of CPU seconds under -race
	// while the package's other tests run in parallel on two cores.
	g.Client.Timeout = 4 * time.Minute
	const q = "What is the capital of France?"
	r := g.Post(t, "/v1/chat/completions", map[string]any{"model": pdModel, "max_tokens": 12,
		"messages": []map[string]string{{"role": "user", "content": q}}}, nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	ids := chatPrompt(t, q)
	want := detok(t, grpcsim.HandoffTokens(ids, 12))
	body := r.Object(t)
	assert.True(t, strings.HasPrefix(body["id"].(string), "chatcmpl-"))
	assert.Equal(t, pdModel, body["model"])
	ch := body["choices"].([]any)
	require.Len(t, ch, 1)
	c := ch[0].(map[string]any)
	assert.Equal(t, want, c["message"].(map[string]any)["content"])
	assert.Equal(t, "length", c["finish_reason"])
	u := body["usage"].(map[string]any)
	assert.EqualValues(t, len(ids), u["prompt_tokens"], "the prompt as the prefill computed it")
	assert.EqualValues(t, 12, u["completion_tokens"])
	handoffClean(t, p, d, 1)
	assert.Zero(t, p.Stats().Errors+d.Stats().Errors)
}

func TestSGLangGRPCChatCompletionStream(t *testing.T) {
	t.Parallel()
	g, p, d := pdFleet(t, grpcsim.EngineSGLang, nil, nil)
	const q = "Stream me a short answer."
	r := g.Post(t, "/v1/chat/completions", map[string]any{"model": pdModel, "max_tokens": 9, "stream": true,
		"stream_options": map[string]any{"include_usage": true},
		"messages":       []map[string]string{{"role": "user", "content": q}}}, nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	assert.Equal(t, "text/event-stream", r.Header.Get("Content-Type"))
	ids := chatPrompt(t, q)
	events, done := sseData(t, r.Body)
	require.True(t, done, "the stream ends with [DONE]")
	var text strings.Builder
	finish := ""
	var usage map[string]any
	for _, ev := range events {
		assert.Equal(t, "chat.completion.chunk", ev["object"])
		if u, ok := ev["usage"].(map[string]any); ok {
			usage = u
		}
		for _, c := range ev["choices"].([]any) {
			c := c.(map[string]any)
			if s, ok := c["delta"].(map[string]any)["content"].(string); ok {
				text.WriteString(s)
			}
			if f, ok := c["finish_reason"].(string); ok {
				finish = f
			}
		}
	}
	assert.Equal(t, detok(t, grpcsim.HandoffTokens(ids, 9)), text.String())
	assert.Equal(t, "length", finish)
	require.NotNil(t, usage, "include_usage sends a usage chunk")
	assert.EqualValues(t, len(ids), usage["prompt_tokens"])
	assert.EqualValues(t, 9, usage["completion_tokens"])
	handoffClean(t, p, d, 1)
}

func TestSGLangGRPCCompletionsAndGenerate(t *testing.T) {
	t.Parallel()
	g, p, d := pdFleet(t, grpcsim.EngineSGLang, nil, nil)
	m, _ := qwen3(t)

	r := g.Post(t, "/v1/completions", map[string]any{"model": pdModel, "prompt": "Once upon a time", "max_tokens": 7}, nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	ids := m.Tokenizer.Encode("Once upon a time", false)
	c := r.Object(t)["choices"].([]any)[0].(map[string]any)
	assert.Equal(t, detok(t, grpcsim.HandoffTokens(ids, 7)), c["text"])
	assert.Equal(t, "text_completion", r.Object(t)["object"])

	// A prompt array is a batch: one sub-request (and room) per prompt, a choice each.
	prompts := []string{"alpha beta", "gamma delta epsilon"}
	r = g.Post(t, "/v1/completions", map[string]any{"model": pdModel, "prompt": prompts, "max_tokens": 5}, nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	ch := r.Object(t)["choices"].([]any)
	require.Len(t, ch, 2)
	for i, pr := range prompts {
		c := ch[i].(map[string]any)
		assert.EqualValues(t, i, c["index"])
		assert.Equal(t, detok(t, grpcsim.HandoffTokens(m.Tokenizer.Encode(pr, false), 5)), c["text"], pr)
	}

	r = g.Post(t, "/generate", map[string]any{"text": "The sky is", "sampling_params": map[string]any{"max_new_tokens": 6}}, nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	gen := r.Object(t)
	gids := grpcsim.HandoffTokens(m.Tokenizer.Encode("The sky is", false), 6)
	assert.Equal(t, detok(t, gids), gen["text"])
	out := gen["output_ids"].([]any)
	require.Len(t, out, 6)
	for i, id := range gids {
		assert.EqualValues(t, id, out[i])
	}
	handoffClean(t, p, d, 4)
}

// A stop string is trimmed by the gateway (SGLang workers take no string stops): the text
// ends before its first occurrence, finish_reason "stop", streaming and not.
func TestSGLangGRPCStopString(t *testing.T) {
	t.Parallel()
	g, p, d := pdFleet(t, grpcsim.EngineSGLang, nil, nil)
	m, _ := qwen3(t)
	const q = "where do we stop"
	full := detok(t, grpcsim.HandoffTokens(m.Tokenizer.Encode(q, false), 12))
	runes := []rune(full)
	require.Greater(t, len(runes), 6)
	stop := string(runes[len(runes)/2 : len(runes)/2+2])
	want := full[:strings.Index(full, stop)]
	for _, stream := range []bool{false, true} {
		r := g.Post(t, "/v1/completions", map[string]any{"model": pdModel, "prompt": q, "max_tokens": 12, "stop": stop, "stream": stream}, nil)
		require.Equal(t, http.StatusOK, r.Status, string(r.Body))
		got, finish := "", ""
		if stream {
			events, done := sseData(t, r.Body)
			require.True(t, done)
			for _, ev := range events {
				for _, c := range ev["choices"].([]any) {
					c := c.(map[string]any)
					if s, ok := c["text"].(string); ok {
						got += s
					}
					if f, ok := c["finish_reason"].(string); ok {
						finish = f
					}
				}
			}
		} else {
			c := r.Object(t)["choices"].([]any)[0].(map[string]any)
			got, finish = c["text"].(string), c["finish_reason"].(string)
		}
		assert.Equal(t, want, got, "stream=%t stop=%q", stream, stop)
		assert.Equal(t, "stop", finish, "stream=%t", stream)
	}
	assert.EqualValues(t, 2, d.Stats().HandoffsReceived)
	assert.Zero(t, p.Stats().Errors+d.Stats().Errors)
}
