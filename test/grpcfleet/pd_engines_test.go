package grpcfleet_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/test/sim/grpcsim"
)

// chatOnce sends one non-streaming chat and asserts its text is the detokenized handoff
// tokens and its usage the prefill's counts: cached is what the prefill reported (0 for a
// cold prompt; the decode, which got the KV, reports every prompt token cached).
func chatOnce(t *testing.T, post func(body map[string]any) (int, map[string]any), q string, n, cached int) {
	t.Helper()
	status, body := post(map[string]any{"model": pdModel, "max_tokens": n,
		"messages": []map[string]string{{"role": "user", "content": q}}})
	require.Equal(t, http.StatusOK, status, body)
	ids := chatPrompt(t, q)
	c := body["choices"].([]any)[0].(map[string]any)
	assert.Equal(t, detok(t, grpcsim.HandoffTokens(ids, n)), c["message"].(map[string]any)["content"])
	u := body["usage"].(map[string]any)
	assert.EqualValues(t, len(ids), u["prompt_tokens"])
	assert.EqualValues(t, n, u["completion_tokens"])
	d, ok := u["prompt_tokens_details"].(map[string]any)
	require.True(t, ok, "usage has prompt_tokens_details: %v", u)
	assert.EqualValues(t, cached, d["cached_tokens"])
}

func TestPDEnginesOverGRPCChat(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, engine, connector string
	}{
		{"tokenspeed", grpcsim.EngineTokenSpeed, ""},
		{"vllm-nixl", grpcsim.EngineVLLM, grpcsim.ConnectorNixl},
		{"vllm-mooncake", grpcsim.EngineVLLM, grpcsim.ConnectorMooncake},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			g, p, d := pdFleet(t, tc.engine, func(role string, c *grpcsim.Config) {
				c.KVConnector = tc.connector
				c.EngineID = role + "-engine"
				c.PageSize = 4 // small pages, so the short prompt below fills some
			}, nil)
			post := func(b map[string]any) (int, map[string]any) {
				r := g.Post(t, "/v1/chat/completions", b, nil)
				return r.Status, r.Object(t)
			}
			q := "Tell me about " + tc.name
			chatOnce(t, post, q, 8, 0)
			// The same prompt again: the prefill's prefix cache holds its full pages, leaving
			// at least one token to compute.
			chatOnce(t, post, q, 8, (len(chatPrompt(t, q))-1)/4*4)
			handoffClean(t, p, d, 2)
			assert.Zero(t, p.Stats().Errors+d.Stats().Errors)
			// smg_pd_kv_transfer_duration_seconds is observed by the sequential (vLLM) dispatch
			// only: docs/observability.md, "When each series is exported".
			m := g.Metrics(t)
			if tc.engine == grpcsim.EngineVLLM {
				assert.Equal(t, 2.0, m.Sum("smg_pd_kv_transfer_duration_seconds_count", "runtime", "vllm"))
			} else {
				assert.False(t, m.Has("smg_pd_kv_transfer_duration_seconds_count"), "no vLLM pair ran")
			}
		})
	}
}
