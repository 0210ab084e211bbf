package grpcfleet_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/test/sim/grpcsim"
)

// chatOnce sends one non-streaming chat and asserts its text is the detokenized handoff
// tokens and its usage the prefill's counts (a cold prompt: 0 cached).
func chatOnce(t *testing.T, post func(body map[string]any) (int, map[string]any), q string, n int) {
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
	if d, ok := u["prompt_tokens_details"].(map[string]any); ok {
		assert.EqualValues(t, 0, d["cached_tokens"], "a cold prompt has nothing cached")
	}
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
			}, nil)
			post := func(b map[string]any) (int, map[string]any) {
				r := g.Post(t, "/v1/chat/completions", b, nil)
				return r.Status, r.Object(t)
			}
			chatOnce(t, post, "Tell me about "+tc.name, 8)
			handoffClean(t, p, d, 1)
			assert.Zero(t, p.Stats().Errors+d.Stats().Errors)
		})
	}
}
