package grpcfleet_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/test/sim/grpcsim"
)

// n>1 on a cold prompt over gRPC (SGLang and TokenSpeed fan out into n single-sample
// dispatches on one prefill): usage describes the client's prompt once, its prompt tokens
// once and its cached tokens as the prompt found the cache (0), although the prefill received
// it once per sample (its prompt_tokens) and may serve later samples from the KV the first one
// wrote. The same prompt again is a hit, counted once.
func TestGRPCFanoutUsageDescribesThePromptOnce(t *testing.T) {
	t.Parallel()
	for _, engine := range []string{grpcsim.EngineSGLang, grpcsim.EngineTokenSpeed} {
		t.Run(engine, func(t *testing.T) {
			t.Parallel()
			g, p, _ := pdFleet(t, engine, nil, nil)
			q := "a cold prompt sampled three times over " + engine
			ids := chatPrompt(t, q)
			cached := func() float64 {
				r := g.Post(t, "/v1/chat/completions", map[string]any{"model": pdModel, "max_tokens": 3, "n": 3,
					"messages": []map[string]string{{"role": "user", "content": q}}}, nil)
				require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
				b := r.Object(t)
				require.Len(t, b["choices"], 3)
				u := b["usage"].(map[string]any)
				assert.EqualValues(t, len(ids), u["prompt_tokens"], "the prompt counted once")
				assert.EqualValues(t, 9, u["completion_tokens"])
				return u["prompt_tokens_details"].(map[string]any)["cached_tokens"].(float64)
			}
			assert.Zero(t, cached(), "a cold prompt found nothing cached")
			assert.EqualValues(t, 3*len(ids), p.Stats().PromptTokens, "the prefill received the prompt once per sample")
			// The simulators' caches hit whole pages (and never the prompt's last token), so the
			// repeat finds a page-aligned part of the prompt: more than nothing, counted once.
			again := cached()
			assert.Positive(t, again, "the same prompt again is cached")
			assert.LessOrEqual(t, again, float64(len(ids)), "cached tokens describe the prompt once, not once per sample")
		})
	}
}
