package grpcfleet_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/test/sim/grpcsim"
)

// namedEvents returns the (event, data) pairs of a named-event SSE body.
func namedEvents(t *testing.T, body []byte) (names []string, data []map[string]any) {
	t.Helper()
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if n, ok := strings.CutPrefix(sc.Text(), "event: "); ok {
			names = append(names, n)
		}
		if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			var m map[string]any
			require.NoError(t, json.Unmarshal([]byte(d), &m), d)
			data = append(data, m)
		}
	}
	return names, data
}

// /v1/messages and /v1/responses over SGLang gRPC PD: the chat template renders the
// converted request, the text is the detokenized handoff tokens.
func TestGRPCMessagesAndResponses(t *testing.T) {
	t.Parallel()
	g, p, d := pdFleet(t, grpcsim.EngineSGLang, nil, nil)
	const q = "Hello from Anthropic"
	want := detok(t, grpcsim.HandoffTokens(chatPrompt(t, q), 6))

	r := g.Post(t, "/v1/messages", map[string]any{"model": pdModel, "max_tokens": 6,
		"messages": []map[string]any{{"role": "user", "content": q}}}, nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	m := r.Object(t)
	assert.Equal(t, "message", m["type"])
	assert.True(t, strings.HasPrefix(m["id"].(string), "msg_"))
	assert.Equal(t, want, m["content"].([]any)[0].(map[string]any)["text"])
	assert.Equal(t, "max_tokens", m["stop_reason"])

	r = g.Post(t, "/v1/messages", map[string]any{"model": pdModel, "max_tokens": 6, "stream": true,
		"messages": []map[string]any{{"role": "user", "content": q}}}, nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	names, data := namedEvents(t, r.Body)
	require.NotEmpty(t, names)
	assert.Equal(t, "message_start", names[0])
	assert.Equal(t, "message_stop", names[len(names)-1])
	var b strings.Builder
	for _, ev := range data {
		if dl, ok := ev["delta"].(map[string]any); ok {
			if s, ok := dl["text"].(string); ok {
				b.WriteString(s)
			}
		}
	}
	assert.Equal(t, want, b.String())

	r = g.Post(t, "/v1/responses", map[string]any{"model": pdModel, "max_output_tokens": 6, "input": q}, nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	resp := r.Object(t)
	assert.Equal(t, "response", resp["object"])
	var out strings.Builder
	for _, it := range resp["output"].([]any) {
		for _, c := range it.(map[string]any)["content"].([]any) {
			out.WriteString(c.(map[string]any)["text"].(string))
		}
	}
	assert.Equal(t, want, out.String())
	handoffClean(t, p, d, 3)
}

// count_tokens on a gRPC fleet is answered by the gateway: no leg is contacted.
func TestGRPCCountTokens(t *testing.T) {
	t.Parallel()
	g, p, d := pdFleet(t, grpcsim.EngineSGLang, nil, nil)
	const q = "Count my tokens"
	r := g.Post(t, "/v1/messages/count_tokens", map[string]any{"model": pdModel,
		"messages": []map[string]any{{"role": "user", "content": q}}}, nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	assert.EqualValues(t, len(chatPrompt(t, q)), r.Object(t)["input_tokens"])
	assert.Zero(t, p.Stats().Requests+d.Stats().Requests)
}
