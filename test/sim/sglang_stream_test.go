package sim_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/test/sim"
)

func TestSGLangStreaming(t *testing.T) {
	t.Parallel()
	t.Run("generate", func(t *testing.T) {
		t.Parallel()
		p, d := pair(t, sim.EngineSGLang)
		body := sglangBody(p, uint64(5), map[string]any{"text": "stream me", "stream": true,
			"sampling_params": map[string]any{"max_new_tokens": 3}})
		pr, dr := both(p.URL()+"/generate", body, d.URL()+"/generate", body)
		assert.Equal(t, "text/event-stream", dr.header.Get("Content-Type"))
		events := sseData(t, dr.body)
		require.Len(t, events, 4)
		assert.Equal(t, "[DONE]", events[3])
		var last map[string]any
		require.NoError(t, json.Unmarshal([]byte(events[2]), &last))
		assert.Equal(t, sim.HandoffText("stream me", 3), last["text"], "cumulative text")
		var firstEv map[string]any
		require.NoError(t, json.Unmarshal([]byte(events[0]), &firstEv))
		assert.Nil(t, firstEv["meta_info"].(map[string]any)["finish_reason"])
		pe := sseData(t, pr.body)
		require.Len(t, pe, 2)
		assert.Equal(t, "[DONE]", pe[1])
	})
	t.Run("chat", func(t *testing.T) {
		t.Parallel()
		p, d := pair(t, sim.EngineSGLang)
		body := sglangBody(p, uint64(6), map[string]any{"messages": []map[string]string{{"role": "user", "content": "hi"}},
			"stream": true, "max_tokens": 4, "stream_options": map[string]bool{"include_usage": true}})
		_, dr := both(p.URL()+"/v1/chat/completions", body, d.URL()+"/v1/chat/completions", body)
		events := sseData(t, dr.body)
		require.Len(t, events, 7) // role, 4 tokens, usage, [DONE]
		assert.Equal(t, "[DONE]", events[6])
		var text strings.Builder
		for _, e := range events[1:5] {
			var c struct {
				Choices []struct {
					Delta struct{ Content string } `json:"delta"`
				} `json:"choices"`
			}
			require.NoError(t, json.Unmarshal([]byte(e), &c))
			text.WriteString(c.Choices[0].Delta.Content)
		}
		assert.Equal(t, sim.HandoffText(sim.ChatPrompt(sim.Message{Role: "user", Content: "hi"}), 4), text.String())
		assert.Contains(t, events[5], `"completion_tokens":4`)
	})
}

// A prefill with delay-body sends its head before the handoff and its body only after it:
// the gateway relies on this to check that decode output flows before the prefill body ends.
func TestSGLangPrefillDelayBody(t *testing.T) {
	t.Parallel()
	p, d := pair(t, sim.EngineSGLang)
	body := sglangBody(p, uint64(9), map[string]any{"text": "delayed", "sim_fault": "prefill:delay-body:50"})
	b, _ := json.Marshal(body)
	req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, p.URL()+"/generate", strings.NewReader(string(b)))
	require.NoError(t, err)
	resp, err := client.Do(req) // returns with the head: no decode has been sent yet
	require.NoError(t, err)
	defer resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Zero(t, p.Stats().HandoffsSent)
	dr := post(d.URL()+"/generate", body)
	assert.Equal(t, http.StatusOK, dr.status)
	assert.Equal(t, sim.HandoffText("delayed", 128), dr.json(t)["text"])
	pb, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	assert.Contains(t, string(pb), `"finish_reason":{"type":"length","length":0}`)
	assert.EqualValues(t, 1, p.Stats().HandoffsSent)
}
