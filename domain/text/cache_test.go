package text_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/domain/text"
	"github.com/smg-go/smg/domain/text/texttest"
)

var (
	privateMu   sync.Mutex
	privateToks = map[string]*text.Tokenizer{}
)

// cacheTokenizer is model's tokenizer for the cache tests alone (a cache attached to the
// shared texttest instance would leak into other tests), parsed once: parsing is slow under
// -race. The cache tests do not run in parallel; each attaches its own cache first.
func cacheTokenizer(t *testing.T, model string, c *text.EncodeCache) *text.Tokenizer {
	t.Helper()
	privateMu.Lock()
	defer privateMu.Unlock()
	tok, ok := privateToks[model]
	if !ok {
		data, err := os.ReadFile(filepath.Join(texttest.Dir(t, model), "tokenizer.json"))
		require.NoError(t, err)
		tok, err = text.Parse(data)
		require.NoError(t, err)
		privateToks[model] = tok
	}
	tok.UseCache(c)
	return tok
}

func bothLayers() text.EncodeCacheOptions {
	return text.EncodeCacheOptions{L0: true, L0MaxEntries: text.DefaultCacheL0MaxEntries, L0MaxBytes: text.DefaultCacheL0MaxBytes,
		L1: true, L1MaxBytes: text.DefaultCacheL1MaxBytes}
}

// The cache never changes what Encode answers: the reference ids of the whole corpus, read
// cold, warm (L0 hits) and with every layer combination, on a byte-level BPE (Qwen3) and a
// SentencePiece-style (Llama-2) tokenizer.
func TestEncodeCacheKeepsReferenceIDs(t *testing.T) {
	texts := corpus(t)
	for _, model := range []string{texttest.Qwen3, texttest.Llama2} {
		var golden []goldenIDs
		readJSON(t, "golden_ids_"+model+".json", &golden)
		for _, o := range []text.EncodeCacheOptions{bothLayers(), {L0: true, L0MaxEntries: 4, L0MaxBytes: 1 << 20}, {L1: true, L1MaxBytes: 1 << 20}} {
			tok := cacheTokenizer(t, model, text.NewEncodeCache(o))
			for round := range 2 {
				for _, g := range golden {
					ids := tok.Encode(texts[g.Name], false)
					require.Equal(t, g.IDs, ids, "%s %+v round %d: %s", model, o, round, g.Name)
					if len(ids) > 0 {
						ids[0] = 999999 // the caller owns the result: the cache must not see this
					}
				}
			}
		}
	}
}

func chatML(msgs ...string) string {
	var b strings.Builder
	for i, m := range msgs {
		role := "user"
		if i == 0 {
			role = "system"
		}
		fmt.Fprintf(&b, "<|im_start|>%s\n%s<|im_end|>\n", role, m)
	}
	return b.String() + "<|im_start|>assistant\n"
}

// A repeated input is an L0 hit; the next turn of a conversation misses L0 but finds its
// earlier messages (the pieces between added tokens) in L1, and only its new message is
// encoded. Hits, misses and reused bytes are counted per layer.
func TestEncodeCacheHitsAndChatPrefixes(t *testing.T) {
	ref := texttest.Tokenizer(t, texttest.Qwen3) // no cache
	c := text.NewEncodeCache(bothLayers())
	tok := cacheTokenizer(t, texttest.Qwen3, c)
	system := "You are a careful assistant who answers in full sentences and cites sources."
	turn1 := chatML(system, "What is the capital of France, and why is it famous?")
	turn2 := chatML(system, "What is the capital of France, and why is it famous?", "And what river runs through it, please?")

	require.Equal(t, ref.Encode(turn1, false), tok.Encode(turn1, false))
	s := c.Stats()
	assert.Equal(t, uint64(0), s.L0Hits)
	assert.Equal(t, uint64(1), s.L0Misses)
	assert.Equal(t, uint64(0), s.L1Hits)
	assert.Equal(t, uint64(2), s.L1Misses, "the system and user pieces (the short role pieces are not cached)")

	require.Equal(t, ref.Encode(turn1, false), tok.Encode(turn1, false))
	s = c.Stats()
	assert.Equal(t, uint64(1), s.L0Hits)
	assert.Equal(t, uint64(len(turn1)), s.L0ReusedBytes)

	require.Equal(t, ref.Encode(turn2, false), tok.Encode(turn2, false))
	s = c.Stats()
	assert.Equal(t, uint64(2), s.L0Misses)
	assert.Equal(t, uint64(2), s.L1Hits, "the system prompt and the first question")
	assert.Equal(t, uint64(3), s.L1Misses, "only the new question was encoded")
	assert.Equal(t, 2, s.L0Entries)
	assert.Equal(t, 3, s.L1Entries)

	// add_special_tokens is part of L0's key.
	llama := cacheTokenizer(t, texttest.Llama3_1, c)
	plain := llama.Encode(system, false)
	withBOS := llama.Encode(system, true)
	assert.Equal(t, len(plain)+1, len(withBOS))
	assert.Equal(t, plain, withBOS[1:])
}

// The layers stay within their bounds, evicting the least recently used entries first and
// counting each eviction; an entry above an eighth of the byte bound is not stored.
func TestEncodeCacheBounds(t *testing.T) {
	c := text.NewEncodeCache(text.EncodeCacheOptions{L0: true, L0MaxEntries: 3, L0MaxBytes: 1 << 20})
	tok := cacheTokenizer(t, texttest.Qwen3, c)
	in := func(i int) string { return fmt.Sprintf("prompt number %d about the weather", i) }
	for i := range 3 {
		tok.Encode(in(i), false)
	}
	tok.Encode(in(0), false) // 0 is now the most recent; 1 the least
	tok.Encode(in(3), false) // evicts 1
	s := c.Stats()
	assert.Equal(t, 3, s.L0Entries)
	assert.Equal(t, uint64(1), s.L0Evictions)
	hits := s.L0Hits
	tok.Encode(in(0), false)
	assert.Equal(t, hits+1, c.Stats().L0Hits, "the recently used entry survived")
	tok.Encode(in(1), false)
	assert.Equal(t, hits+1, c.Stats().L0Hits, "the least recently used entry was evicted")

	const maxBytes = 16 << 10
	c = text.NewEncodeCache(text.EncodeCacheOptions{L1: true, L1MaxBytes: maxBytes})
	tok = cacheTokenizer(t, texttest.Qwen3, c)
	for i := range 400 {
		tok.Encode(chatML(fmt.Sprintf("system prompt variant %d with enough words to be cached", i), "hello there, how are you today my friend?"), false)
		assert.LessOrEqual(t, c.Stats().L1Bytes, int64(maxBytes))
	}
	s = c.Stats()
	assert.Positive(t, s.L1Evictions)
	assert.Positive(t, s.L1Hits, "the shared user message stayed (recently used)")
	tok.Encode(chatML(strings.Repeat("long ", 1000), "x"), false)
	assert.LessOrEqual(t, c.Stats().L1Bytes, int64(maxBytes), "a piece above an eighth of the bound is not stored")

	assert.Nil(t, text.NewEncodeCache(text.EncodeCacheOptions{}), "no layer: no cache")
	assert.Equal(t, text.EncodeCacheStats{}, (*text.EncodeCache)(nil).Stats())
}

// A registry attaches its cache to models put before and after UseCache.
func TestRegistryAttachesCache(t *testing.T) {
	r := text.NewRegistry(text.OSFiles{}, nil, text.LoadOptions{})
	before := &text.Model{Tokenizer: cacheTokenizer(t, texttest.Qwen3, nil)}
	r.Put("a", before)
	c := text.NewEncodeCache(bothLayers())
	r.UseCache(c)
	after := &text.Model{Tokenizer: cacheTokenizer(t, texttest.Llama2, nil)}
	r.Put("b", after)
	before.Tokenizer.Encode("hello world", false)
	after.Tokenizer.Encode("hello world", false)
	assert.Equal(t, uint64(2), c.Stats().L0Misses, "keyed by tokenizer: two models, two entries")
	before.Tokenizer.Encode("hello world", false)
	assert.Equal(t, uint64(1), c.Stats().L0Hits)
	assert.Equal(t, 2, c.Stats().L0Entries)
	assert.Same(t, c, r.Cache())
}
