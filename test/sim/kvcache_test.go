package sim_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/domain/text/texttest"
	"github.com/smg-go/smg/test/sim"
	"github.com/smg-go/smg/test/sim/kvcache"
)

// words returns n distinct words w<from>…, a prompt of n stand-in tokens.
func words(from, n int) string {
	var b strings.Builder
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString("w")
		b.WriteString(itoaT(from + i))
	}
	return b.String()
}

func itoaT(i int) string { b, _ := json.Marshal(i); return string(b) }

type sinkRec struct {
	mu  sync.Mutex
	evs []kvcache.Event
}

func (r *sinkRec) Publish(evs []kvcache.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.evs = append(r.evs, evs...)
}

func (r *sinkRec) stored() (blocks int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, e := range r.evs {
		if e.Stored != nil {
			blocks += len(e.Stored.BlockHashes)
		}
	}
	return blocks
}

func statsOf(t *testing.T, s *sim.Server) map[string]any {
	t.Helper()
	r := get(s.URL() + "/sim/stats")
	require.Equal(t, http.StatusOK, r.status)
	return r.json(t)
}

// A second prompt that shares a 40-token system prompt with the first reports the shared
// full blocks as cached (vLLM, blocks of 16: 32 tokens), and /sim/stats counts the prompt
// tokens received, the hit, the blocks kept and the busy time.
func TestSharedPrefixReportsCachedTokensAndStatsMove(t *testing.T) {
	t.Parallel()
	sink := &sinkRec{}
	s := start(t, cfgOf(sim.EngineVLLM, sim.RolePrefill, func(c *sim.Config) { c.KVEventSink = sink }))
	system := words(0, 40)
	first := parseCompl(t, post(s.URL()+"/v1/completions", map[string]any{"prompt": system + " " + words(100, 10), "max_tokens": 2}))
	assert.Equal(t, 50, first.Usage.PromptTokens)
	assert.Equal(t, 0, first.Usage.PromptTokensDetails.CachedTokens, "cold")
	second := parseCompl(t, post(s.URL()+"/v1/completions", map[string]any{"prompt": system + " " + words(200, 7), "max_tokens": 2}))
	assert.Equal(t, 47, second.Usage.PromptTokens)
	assert.Equal(t, 32, second.Usage.PromptTokensDetails.CachedTokens, "the system prompt's two full blocks")

	st := statsOf(t, s)
	assert.EqualValues(t, 97, st["prompt_tokens"], "prompt tokens received")
	assert.EqualValues(t, 32, st["cached_tokens"])
	assert.EqualValues(t, 0, st["evicted_blocks"])
	assert.EqualValues(t, 3, st["kv_cache_blocks_used"], "the first's 3 full blocks; the second's third block is partial, not kept")
	for _, k := range []string{"queue_ms", "busy_ms"} {
		assert.Contains(t, st, k)
	}
	assert.Equal(t, 3, sink.stored(), "one BlockStored hash per cached block")
}

// A vLLM decode that receives the KV reports every prompt token as cached; one that
// recomputes reports only its local prefix hit (what a recompute detector relies on).
func TestDecodeCachedCountsTransferredOrLocalOnly(t *testing.T) {
	t.Parallel()
	p, d := pair(t, sim.EngineVLLM)
	prompt := words(0, 40)
	kv := nixlPrefill(t, p, prompt)
	got := parseCompl(t, post(d.URL()+"/v1/completions", map[string]any{"prompt": prompt, "max_tokens": 2, "kv_transfer_params": kv}))
	assert.Equal(t, 40, got.Usage.PromptTokensDetails.CachedTokens, "all 40 came through the handoff")
	again := parseCompl(t, post(d.URL()+"/v1/completions", map[string]any{"prompt": prompt, "max_tokens": 2}))
	assert.Equal(t, 32, again.Usage.PromptTokensDetails.CachedTokens, "recomputed: only the decode's own cached blocks")
	st := d.Stats()
	assert.Equal(t, int64(80), st.PromptTokens)
	assert.Equal(t, int64(32), st.CachedTokens, "the decode's own hits; the transfer is not a hit")
}

// With a cache of 4 blocks and blocks of 4 tokens, a third prompt evicts the least
// recently used one.
func TestEvictionShowsInStats(t *testing.T) {
	t.Parallel()
	s := start(t, cfgOf(sim.EngineVLLM, sim.RolePrefill, func(c *sim.Config) { c.BlockSize, c.KVCacheBlocks = 4, 4 }))
	gen := func(p string) int {
		return parseCompl(t, post(s.URL()+"/v1/completions", map[string]any{"prompt": p, "max_tokens": 1})).Usage.PromptTokensDetails.CachedTokens
	}
	a, b, c := words(0, 8), words(100, 8), words(200, 8)
	assert.Equal(t, 0, gen(a))
	assert.Equal(t, 4, gen(a))
	assert.Equal(t, 0, gen(b))
	assert.Equal(t, 0, gen(c))
	st := s.Stats()
	assert.Equal(t, int64(2), st.EvictedBlocks, "c took a's two blocks")
	assert.Equal(t, int64(4), st.KVCacheBlocksUsed)
	assert.Equal(t, 0, gen(a), "a was the least recently used: evicted")
	r := post(s.URL()+"/v1/completions", map[string]any{"prompt": words(0, 17), "max_tokens": 1})
	assert.Equal(t, http.StatusBadRequest, r.status, "a prompt larger than the cache: %s", r.body)
}

// With --tokenizer-path the HTTP simulator counts a text prompt in the real tokenizer's ids
// (the gateway's own loader), and a prompt that extends another hits its full blocks.
func TestTokenizerPathTokenizesWithTheRealTokenizer(t *testing.T) {
	t.Parallel()
	dir := texttest.Dir(t, texttest.Llama2)
	tok := texttest.Tokenizer(t, texttest.Llama2)
	s := start(t, cfgOf(sim.EngineVLLM, sim.RolePrefill, func(c *sim.Config) { c.TokenizerPath = dir; c.BlockSize = 4 }))
	base := "The quick brown fox jumps over the lazy dog, and then it runs far away into the forest"
	n := len(tok.Encode(base, false))
	require.NotEqual(t, sim.PromptTokens(base), n, "the real count differs from the stand-in's")
	first := parseCompl(t, post(s.URL()+"/v1/completions", map[string]any{"prompt": base, "max_tokens": 1}))
	assert.Equal(t, n, first.Usage.PromptTokens)
	ext := base + " where nobody ever finds it again."
	second := parseCompl(t, post(s.URL()+"/v1/completions", map[string]any{"prompt": ext, "max_tokens": 1}))
	assert.Equal(t, len(tok.Encode(ext, false)), second.Usage.PromptTokens)
	assert.Equal(t, (n-1)/4*4, second.Usage.PromptTokensDetails.CachedTokens, "the shared prefix's full blocks (the base's last token may merge differently)")

	_, err := sim.Start(cfgOf(sim.EngineVLLM, sim.RolePrefill, func(c *sim.Config) { c.TokenizerPath = t.TempDir() }))
	assert.ErrorContains(t, err, "tokenizer.json")
}

// SGLang's POST /flush_cache and vLLM's POST /reset_prefix_cache drop the cache: the next
// repeat is cold, and the sink sees AllBlocksCleared.
func TestFlushCacheEndpointsClearTheCache(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ engine, path string }{{sim.EngineSGLang, "/flush_cache"}, {sim.EngineVLLM, "/reset_prefix_cache"}} {
		t.Run(c.engine, func(t *testing.T) {
			t.Parallel()
			sink := &sinkRec{}
			// A SGLang decode told of SGLang's fake bootstrap host computes locally.
			s := start(t, cfgOf(c.engine, sim.RoleDecode, func(cfg *sim.Config) { cfg.KVEventSink = sink; cfg.BlockSize = 4 }))
			send := func() int {
				return parseCompl(t, post(s.URL()+"/v1/completions", map[string]any{"prompt": words(0, 9), "max_tokens": 1,
					"bootstrap_host": "2.2.2.2", "bootstrap_room": 1})).Usage.PromptTokensDetails.CachedTokens
			}
			assert.Equal(t, 0, send())
			assert.Equal(t, 8, send())
			r := post(s.URL()+c.path, nil)
			require.Equal(t, http.StatusOK, r.status, "%s", r.body)
			assert.Equal(t, 0, send(), "flushed")
			assert.Zero(t, s.Stats().EvictedBlocks, "a flush is not an eviction")
			sink.mu.Lock()
			defer sink.mu.Unlock()
			var cleared int
			for _, e := range sink.evs {
				if e.Cleared {
					cleared++
				}
			}
			assert.Equal(t, 1, cleared)
		})
	}
}
