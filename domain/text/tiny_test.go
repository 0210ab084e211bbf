package text_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

// tinyTokenizerJSON is a minimal byte-level BPE tokenizer.json (256 byte tokens, one merge
// "h"+"i", one special token) for tests about loading rather than about a real vocabulary.
func tinyTokenizerJSON(t testing.TB) []byte {
	t.Helper()
	vocab := map[string]int{}
	n := 0
	for b := 0; b < 256; b++ {
		if (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF) {
			vocab[string(rune(b))] = b
		} else {
			vocab[string(rune(256+n))] = b
			n++
		}
	}
	vocab["hi"] = 256
	doc := map[string]any{
		"added_tokens":   []map[string]any{{"id": 257, "content": "<|end|>", "special": true}},
		"normalizer":     nil,
		"pre_tokenizer":  map[string]any{"type": "ByteLevel", "add_prefix_space": false, "use_regex": true},
		"post_processor": map[string]any{"type": "ByteLevel"},
		"model":          map[string]any{"type": "BPE", "vocab": vocab, "merges": []string{"h i"}},
	}
	b, err := json.Marshal(doc)
	require.NoError(t, err)
	return b
}
