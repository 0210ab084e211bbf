package selectivepd_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/test/fleet"
	"github.com/smg-go/smg/test/sim"
)

// A decode-only request has no prefill leg: the decode's own usage (a stream's
// include_usage event, a body's usage) is relayed as the engine sent it, is not read as a
// silent recompute, and nothing assumes a prefill result (a streamed include_usage answer
// used to hit a nil prefill in the recompute detector and drop the connection).
func TestDecodeOnlyUsageIsTheDecodes(t *testing.T) {
	t.Parallel()
	g := gateway(t, 1<<20)
	vp := fleet.StartSim(t, sim.Config{Engine: sim.EngineVLLM, Role: sim.RolePrefill, KVConnector: sim.ConnectorNixl})
	vd := fleet.StartSim(t, sim.Config{Engine: sim.EngineVLLM, Role: sim.RoleDecode, KVConnector: sim.ConnectorNixl})
	register(t, g, vp, nil)
	register(t, g, vd, map[string]any{"kv_role": "kv_both"})
	g.WaitWorkersHealthy(t, 2)

	// Longer than a KV page, so a cold prompt's usage (0 cached) looks like a recompute to a
	// detector that does not know there was no handoff.
	long := strings.Repeat("a question of a few pages served alone ", 20)
	msgs := []map[string]string{{"role": "user", "content": long}}
	for _, tc := range []struct {
		name string
		body map[string]any
	}{
		{"chat stream with include_usage", map[string]any{"model": model, "messages": msgs, "max_tokens": 3, "stream": true,
			"stream_options": map[string]any{"include_usage": true}}},
		{"completions stream with include_usage", map[string]any{"model": model, "prompt": long, "max_tokens": 3, "stream": true,
			"stream_options": map[string]any{"include_usage": true}}},
		{"chat body", map[string]any{"model": model, "messages": msgs, "max_tokens": 3}},
		{"chat n>1 with logprobs", map[string]any{"model": model, "messages": msgs, "max_tokens": 3, "n": 2, "logprobs": true}},
	} {
		path := "/v1/chat/completions"
		if _, ok := tc.body["prompt"]; ok {
			path = "/v1/completions"
		}
		r := g.Post(t, path, tc.body, nil)
		require.Equal(t, http.StatusOK, r.Status, "%s: %s", tc.name, r.Body)
		var usage map[string]any
		if tc.body["stream"] == true {
			body := strings.TrimSpace(string(r.Body))
			require.True(t, strings.HasSuffix(body, "data: [DONE]"), "%s: %s", tc.name, r.Body)
			for _, line := range strings.Split(body, "\n") {
				data, ok := strings.CutPrefix(line, "data: ")
				if !ok || data == "[DONE]" {
					continue
				}
				var ev map[string]any
				require.NoError(t, json.Unmarshal([]byte(data), &ev))
				if u, ok := ev["usage"].(map[string]any); ok {
					usage = u
				}
			}
		} else {
			usage = r.Object(t)["usage"].(map[string]any)
		}
		require.NotNil(t, usage, "%s: usage present", tc.name)
		assert.Positive(t, usage["prompt_tokens"], tc.name)
		assert.Positive(t, usage["completion_tokens"], tc.name)
	}
	assert.EqualValues(t, 4, vd.Stats().DecodeOnlyRequests, "every request served by the decode alone")
	assert.Zero(t, vp.Stats().Requests, "no prefill leg")
	assert.Zero(t, g.Metrics(t).Sum("smg_pd_recomputed_prompts_total"), "a decode-only answer is no silent recompute")
}
