package grpcfleet_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/app/config"
	"github.com/smg-go/smg/test/sim/grpcsim"
)

// With --tokenizer-cache-enable-l0/-l1 a repeated chat request is an L0 hit and the next
// turn of the conversation finds its system prompt and first question in L1; the answers
// (prompt counts included) are those of a cold encode, and /metrics shows the lookups.
func TestGRPCTokenizerCacheSeries(t *testing.T) {
	t.Parallel()
	// The gateway loads its own tokenizer: the shared test model must not get this cache.
	g, p, d := pdFleetLoading(t, grpcsim.EngineSGLang, nil, func(c *config.Config) {
		c.TokenizerCache.EnableL0, c.TokenizerCache.EnableL1 = true, true
	})
	g.Client.Timeout = 4 * time.Minute // the first request parses Qwen3's tokenizer.json
	system := map[string]string{"role": "system", "content": "You are a careful assistant who answers in full sentences."}
	q1 := map[string]string{"role": "user", "content": "What is the capital of France, and why?"}
	q2 := map[string]string{"role": "user", "content": "And which river runs through it, please?"}
	a1 := map[string]string{"role": "assistant", "content": "Paris."}
	ask := func(msgs ...map[string]string) float64 {
		r := g.Post(t, "/v1/chat/completions", map[string]any{"model": pdModel, "max_tokens": 4, "messages": msgs}, nil)
		require.Equal(t, http.StatusOK, r.Status, string(r.Body))
		return r.Object(t)["usage"].(map[string]any)["prompt_tokens"].(float64)
	}
	first := ask(system, q1)
	assert.Equal(t, first, ask(system, q1))
	ask(system, q1, a1, q2)

	m := g.Metrics(t)
	assert.Equal(t, 1.0, m.Sum("smg_tokenizer_cache_lookups_total", "layer", "l0", "result", "hit"))
	assert.Equal(t, 2.0, m.Sum("smg_tokenizer_cache_lookups_total", "layer", "l0", "result", "miss"))
	assert.Equal(t, 2.0, m.Sum("smg_tokenizer_cache_lookups_total", "layer", "l1", "result", "hit"), "the system prompt and the first question")
	assert.Equal(t, 2.0, m.Sum("smg_tokenizer_cache_entries", "layer", "l0"))
	assert.Positive(t, m.Sum("smg_tokenizer_cache_memory_bytes", "layer", "l1"))
	assert.Zero(t, m.Sum("smg_tokenizer_cache_evictions_total"))
	handoffClean(t, p, d, 3)
}
