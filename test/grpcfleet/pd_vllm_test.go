package grpcfleet_test

import (
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/test/fleet"
	"github.com/smg-go/smg/test/sim/grpcsim"
)

// metric returns the value of the exposition line that starts with series ("name{labels}"
// or "name"), or -1 when absent.
func metric(t *testing.T, g *fleet.Gateway, series string) float64 {
	t.Helper()
	r := g.Get(t, "/metrics")
	require.Equal(t, http.StatusOK, r.Status)
	re := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(series) + ` (\S+)$`)
	m := re.FindStringSubmatch(string(r.Body))
	if m == nil {
		return -1
	}
	v, err := strconv.ParseFloat(m[1], 64)
	require.NoError(t, err)
	return v
}

// cbOutcomes is smg_worker_cb_outcomes_total for the worker at url and outcome, summed
// over the series whose labels contain both (0 when none).
func cbOutcomes(t *testing.T, g *fleet.Gateway, url, outcome string) float64 {
	t.Helper()
	r := g.Get(t, "/metrics")
	total := 0.0
	for _, line := range strings.Split(string(r.Body), "\n") {
		if strings.HasPrefix(line, "smg_worker_cb_outcomes_total{") && strings.Contains(line, `outcome="`+outcome+`"`) &&
			strings.Contains(line, url) {
			v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
			require.NoError(t, err)
			total += v
		}
	}
	return total
}

// A NIXL prefill that returns no kv_transfer_params: the decode recomputes the prompt,
// smg_pd_kv_transfer_failures_total counts it, and the answer is the recomputed text.
func TestVLLMNixlPrefillReturnsNothing(t *testing.T) {
	t.Parallel()
	g, p, d := pdFleet(t, grpcsim.EngineVLLM, func(role string, c *grpcsim.Config) {
		if role == grpcsim.RolePrefill {
			c.Faults = []string{"no-kv-params"}
		}
	}, nil)
	r := g.Post(t, "/v1/completions", map[string]any{"model": pdModel, "prompt": "nothing handed over", "max_tokens": 5}, nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	m, _ := qwen3(t)
	ids := m.Tokenizer.Encode("nothing handed over", false)
	assert.Equal(t, detok(t, grpcsim.RecomputeTokens(ids, 5)), r.Object(t)["choices"].([]any)[0].(map[string]any)["text"])
	assert.EqualValues(t, 1, d.Stats().RecomputedPrompts)
	assert.Zero(t, p.Stats().HandoffsSent)
	assert.EqualValues(t, 1, metric(t, g, "smg_pd_kv_transfer_failures_total"))
	assert.EqualValues(t, 1, metric(t, g, `smg_pd_kv_connector_mode_total{mode="nixl"}`))
}

// vLLM n>1: no handoff (single-consumer KV), the prefill still runs untagged, the decode
// computes the prompt and returns n choices.
func TestVLLMParallelSamplingSkipsHandoff(t *testing.T) {
	t.Parallel()
	g, p, d := pdFleet(t, grpcsim.EngineVLLM, nil, nil)
	const q = "two samples from vllm"
	r := g.Post(t, "/v1/chat/completions", map[string]any{"model": pdModel, "max_tokens": 3, "n": 2,
		"messages": []map[string]string{{"role": "user", "content": q}}}, nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	ids := chatPrompt(t, q)
	ch := r.Object(t)["choices"].([]any)
	require.Len(t, ch, 2)
	for i, c := range ch {
		assert.Equal(t, detok(t, grpcsim.SampleTokens(ids, false, i, 3)), c.(map[string]any)["message"].(map[string]any)["content"], i)
	}
	assert.EqualValues(t, 1, p.Stats().Requests, "the prefill leg still runs")
	assert.Zero(t, p.Stats().HandoffsSent)
	assert.EqualValues(t, 1, d.Stats().RecomputedPrompts)
	assert.Zero(t, d.Stats().Errors)
}

// Streaming on TokenSpeed and vLLM: the SSE text is the handoff text; TTFT is recorded.
func TestGRPCStreamingTokenSpeedAndVLLM(t *testing.T) {
	t.Parallel()
	for _, engine := range []string{grpcsim.EngineTokenSpeed, grpcsim.EngineVLLM} {
		t.Run(engine, func(t *testing.T) {
			t.Parallel()
			g, p, d := pdFleet(t, engine, nil, nil)
			r := g.Post(t, "/v1/completions", map[string]any{"model": pdModel, "prompt": "stream " + engine, "max_tokens": 6, "stream": true}, nil)
			require.Equal(t, http.StatusOK, r.Status, string(r.Body))
			assert.NotEmpty(t, r.Header.Get("X-Smg-Routed-Worker-Id"))
			events, done := sseData(t, r.Body)
			require.True(t, done)
			var b strings.Builder
			for _, ev := range events {
				for _, c := range ev["choices"].([]any) {
					if s, ok := c.(map[string]any)["text"].(string); ok {
						b.WriteString(s)
					}
				}
			}
			m, _ := qwen3(t)
			assert.Equal(t, detok(t, grpcsim.HandoffTokens(m.Tokenizer.Encode("stream "+engine, false), 6)), b.String())
			handoffClean(t, p, d, 1)
			assert.EqualValues(t, 1, metric(t, g, `smg_pd_ttft_seconds_count{backend_type="pd",model="`+pdModel+`",runtime="`+engine+`"}`))
			assert.EqualValues(t, 1, metric(t, g, `smg_router_ttft_seconds_count{backend_type="pd",endpoint="completions",model="`+pdModel+`",router_type="grpc"}`),
				"the decode leg's own TTFT")
		})
	}
}

// vLLM streams count delta completion_tokens (output_kind=DELTA, as the simulator now
// sends): the streamed usage still counts every generated token, not the last delta.
func TestVLLMGRPCStreamUsageCountsEveryDelta(t *testing.T) {
	t.Parallel()
	g, p, d := pdFleet(t, grpcsim.EngineVLLM, nil, nil)
	const q = "Stream me a short answer."
	r := g.Post(t, "/v1/chat/completions", map[string]any{"model": pdModel, "max_tokens": 9, "stream": true,
		"stream_options": map[string]any{"include_usage": true},
		"messages":       []map[string]string{{"role": "user", "content": q}}}, nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	events, done := sseData(t, r.Body)
	require.True(t, done, "the stream ends with [DONE]")
	var usage map[string]any
	for _, ev := range events {
		if u, ok := ev["usage"].(map[string]any); ok {
			usage = u
		}
	}
	require.NotNil(t, usage, "include_usage sends a usage chunk")
	assert.EqualValues(t, len(chatPrompt(t, q)), usage["prompt_tokens"])
	assert.EqualValues(t, 9, usage["completion_tokens"])
	handoffClean(t, p, d, 1)
}
