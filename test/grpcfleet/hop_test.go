package grpcfleet_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/test/load"
	"github.com/smg-go/smg/test/sim/grpcsim"
)

// TestHTTPHopAnswersLikeACompletionsServer checks the gRPC benchmark's ceiling mode: behind
// its bare handler the direct client's two legs run with a real handoff, a JSON request
// gets a text_completion body with the detokenized text, a streamed one SSE chunks ending
// in [DONE], and load phases through it complete without errors.
func TestHTTPHopAnswersLikeACompletionsServer(t *testing.T) {
	t.Parallel()
	_, p, d := pdFleet(t, grpcsim.EngineSGLang, nil, nil)
	wl := load.Workload{Model: pdModel, Prompt: "the quick brown fox jumps over the lazy dog", MaxTokens: 6}
	direct := directSGLang(t, p, d, wl)
	hc := load.NewClient(4)
	hop, err := load.NewHTTPHop(direct, wl, hc)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, hop.Close()) })

	resp, err := hc.Post(hop.URL()+"/v1/completions", "application/json", bytes.NewReader(wl.Body()))
	require.NoError(t, err)
	var body struct {
		Object  string `json:"object"`
		Model   string `json:"model"`
		Choices []struct {
			Text         string `json:"text"`
			FinishReason string `json:"finish_reason"`
		} `json:"choices"`
	}
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&body))
	require.NoError(t, resp.Body.Close())
	assert.Equal(t, "text_completion", body.Object)
	assert.Equal(t, pdModel, body.Model)
	require.Len(t, body.Choices, 1)
	assert.NotEmpty(t, body.Choices[0].Text)
	assert.Equal(t, "length", body.Choices[0].FinishReason)

	swl := wl
	swl.Stream = true
	resp, err = hc.Post(hop.URL()+"/v1/completions", "application/json", bytes.NewReader(swl.Body()))
	require.NoError(t, err)
	assert.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
	var events []string
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if line, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			events = append(events, line)
		}
	}
	require.NoError(t, resp.Body.Close())
	require.GreaterOrEqual(t, len(events), 2)
	assert.Equal(t, "[DONE]", events[len(events)-1])
	var text strings.Builder
	for _, ev := range events[:len(events)-1] {
		var chunk struct {
			Choices []struct{ Text string } `json:"choices"`
		}
		require.NoError(t, json.Unmarshal([]byte(ev), &chunk), ev)
		require.Len(t, chunk.Choices, 1)
		text.WriteString(chunk.Choices[0].Text)
	}
	assert.Equal(t, body.Choices[0].Text, text.String(), "the streamed chunks add up to the JSON answer's text")

	for _, stream := range []bool{false, true} {
		w := wl
		w.Stream = stream
		direct.Workload = w
		h, err := load.NewHTTPHop(direct, w, hc)
		require.NoError(t, err)
		s, err := load.Run(context.Background(), h, load.Options{Concurrency: 2, Requests: 20, Duration: 20 * time.Second})
		require.NoError(t, h.Close())
		require.NoError(t, err)
		assert.Equal(t, 20, s.OK, "stream=%t", stream)
		assert.Zero(t, s.Errors, "stream=%t: %s", stream, s.FirstError)
	}
	ps, ds := p.Stats(), d.Stats()
	assert.Equal(t, ps.HandoffsSent, ds.HandoffsReceived)
	assert.Zero(t, ds.RecomputedPrompts+ps.UnmatchedRooms+ds.UnmatchedRooms)
}
