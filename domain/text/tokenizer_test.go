package text_test

import (
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/text/unicode/norm"

	"github.com/smg-go/smg/domain/text"
	"github.com/smg-go/smg/domain/text/texttest"
)

type corpusEntry struct {
	Name string `json:"name"`
	Text string `json:"text"`
}

type goldenIDs struct {
	Name               string   `json:"name"`
	IDs                []uint32 `json:"ids"`
	Decoded            string   `json:"decoded"`
	DecodedSkipSpecial string   `json:"decoded_skip_special"`
}

func readJSON(t testing.TB, name string, v any) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(data, v))
}

func corpus(t testing.TB) map[string]string {
	var entries []corpusEntry
	readJSON(t, "corpus.json", &entries)
	m := make(map[string]string, len(entries))
	for _, e := range entries {
		m[e.Name] = e.Text
	}
	return m
}

// Golden ids come from the JS reference tokenizer (testdata/gen_ids.js) over testdata/corpus.json.
func TestEncodeDecodeMatchesReference(t *testing.T) {
	t.Parallel()
	texts := corpus(t)
	for _, model := range []string{texttest.Qwen3, texttest.Llama3_1, texttest.Llama2} {
		t.Run(model, func(t *testing.T) {
			t.Parallel()
			tok := texttest.Tokenizer(t, model)
			var golden []goldenIDs
			readJSON(t, "golden_ids_"+model+".json", &golden)
			require.GreaterOrEqual(t, len(golden), 15)
			for _, g := range golden {
				s, ok := texts[g.Name]
				require.True(t, ok, g.Name)
				assert.Equal(t, g.IDs, tok.Encode(s, false), "encode %s", g.Name)
				assert.Equal(t, g.Decoded, tok.Decode(g.IDs, false), "decode %s", g.Name)
				assert.Equal(t, g.DecodedSkipSpecial, tok.Decode(g.IDs, true), "decode skipping specials %s", g.Name)
				switch {
				case model == texttest.Qwen3:
					assert.Equal(t, norm.NFC.String(s), tok.Decode(g.IDs, false), "round trip %s", g.Name)
				case model == texttest.Llama2 && strings.HasPrefix(g.Name, "inline_special"):
					// SentencePiece prepends "▁" to the text after each special token.
				default:
					assert.Equal(t, s, tok.Decode(g.IDs, false), "round trip %s", g.Name)
				}
			}
		})
	}
}

func TestKnownIDs(t *testing.T) {
	t.Parallel()
	qwen := texttest.Tokenizer(t, texttest.Qwen3)
	llama := texttest.Tokenizer(t, texttest.Llama3_1)
	cases := []struct {
		name    string
		tok     *text.Tokenizer
		in      string
		special bool
		want    []uint32
	}{
		{"qwen hello", qwen, "Hello, world!", false, []uint32{9707, 11, 1879, 0}},
		{"qwen inline specials", qwen, "<|im_start|>user\nhi<|im_end|>", false, []uint32{151644, 872, 198, 6023, 151645}},
		{"qwen adds nothing with special tokens", qwen, "Hello, world!", true, []uint32{9707, 11, 1879, 0}},
		{"llama hello", llama, "Hello, world!", false, []uint32{9906, 11, 1917, 0}},
		{"llama prepends begin_of_text", llama, "Hello, world!", true, []uint32{128000, 9906, 11, 1917, 0}},
		{"empty", qwen, "", false, []uint32{}},
	}
	for _, c := range cases {
		assert.Equal(t, c.want, c.tok.Encode(c.in, c.special), c.name)
	}
	id, ok := qwen.TokenID("<|im_end|>")
	assert.True(t, ok)
	assert.Equal(t, uint32(151645), id)
	assert.True(t, qwen.IsSpecial(151645))
	assert.False(t, qwen.IsSpecial(151667), "<think> is an added token but not special")
	assert.Equal(t, "hi", qwen.Decode([]uint32{151644, 6023, 151645}, true))
	assert.Equal(t, "hi", qwen.Decode([]uint32{6023, 4_000_000}, false), "unknown ids are skipped")
}

func TestLongPiecesUseTheSameMergeOrder(t *testing.T) {
	t.Parallel()
	tok := texttest.Tokenizer(t, texttest.Qwen3)
	// A 49+ byte piece takes the heap path; the same text cut into pieces the quadratic path
	// handles must decode identically, and both must round-trip.
	for _, s := range []string{strings.Repeat("ab", 40), strings.Repeat(" ", 70) + "x", strings.Repeat("é", 30)} {
		ids := tok.Encode(s, false)
		assert.Equal(t, s, tok.Decode(ids, false))
		assert.Less(t, len(ids), len(s), "merges applied for %q", s)
	}
}

func TestUnsupportedTokenizersNameTheModelType(t *testing.T) {
	t.Parallel()
	cases := map[string]string{
		"unigram":   `{"model":{"type":"Unigram","vocab":[]}}`,
		"wordpiece": `{"model":{"type":"WordPiece","vocab":{}}}`,
		"sentencepiece bpe": `{"normalizer":{"type":"Sequence","normalizers":[{"type":"Prepend","prepend":"▁"}]},
			"pre_tokenizer":null,"model":{"type":"BPE","byte_fallback":true,"vocab":{},"merges":[]}}`,
		"metaspace": `{"pre_tokenizer":{"type":"Metaspace"},"model":{"type":"BPE","vocab":{},"merges":[]}}`,
		"metaspace with byte fallback": `{"normalizer":null,"pre_tokenizer":{"type":"Metaspace","replacement":"▁","prepend_scheme":"first"},
			"model":{"type":"BPE","byte_fallback":true,"vocab":{},"merges":[]}}`,
	}
	for name, doc := range cases {
		_, err := text.Parse([]byte(doc))
		require.Error(t, err, name)
		assert.ErrorIs(t, err, text.ErrUnsupportedTokenizer, name)
	}
	_, err := text.Parse([]byte(`{"model":`))
	assert.Error(t, err)
	assert.NotErrorIs(t, err, text.ErrUnsupportedTokenizer)
}

// Any text round-trips: random strings over ASCII, Latin, combining marks, CJK, emoji,
// whitespace and the added tokens' characters.
func TestRandomTextRoundTrips(t *testing.T) {
	t.Parallel()
	ranges := [][2]rune{{0x20, 0x7e}, {0x09, 0x0d}, {0xa0, 0x17f}, {0x300, 0x36f}, {0x4e00, 0x4e80}, {0x1f300, 0x1f64f}, {0x2000, 0x206f}, {0xac00, 0xac40}}
	rng := rand.New(rand.NewPCG(5, 6))
	for _, model := range []string{texttest.Qwen3, texttest.Llama3_1, texttest.Llama2} {
		tok := texttest.Tokenizer(t, model)
		for i := 0; i < 300; i++ {
			var sb strings.Builder
			for n := rng.IntN(40); n >= 0; n-- {
				r := ranges[rng.IntN(len(ranges))]
				sb.WriteRune(r[0] + rune(rng.IntN(int(r[1]-r[0]+1))))
				if rng.IntN(20) == 0 {
					sb.WriteString("<|im_end|>")
				}
			}
			s := sb.String()
			want := s
			if model == texttest.Qwen3 {
				// Added tokens are matched before normalisation (HF), so NFC applies between them:
				// "<|im_end|>" + U+0338 must not compose into "<|im_end|" + "≯".
				parts := strings.Split(s, "<|im_end|>")
				for i := range parts {
					parts[i] = norm.NFC.String(parts[i])
				}
				want = strings.Join(parts, "<|im_end|>")
			}
			require.Equal(t, want, tok.Decode(tok.Encode(s, false), false), "%s %q", model, s)
		}
	}
}

// 80 pseudo-random strings (testdata/gen_ids.js) encode to the reference's ids for each model.
func TestRandomStringsMatchReference(t *testing.T) {
	t.Parallel()
	var golden map[string]json.RawMessage
	readJSON(t, "golden_random.json", &golden)
	var strs []string
	require.NoError(t, json.Unmarshal(golden["strings"], &strs))
	require.Len(t, strs, 80)
	for _, model := range []string{texttest.Qwen3, texttest.Llama3_1, texttest.Llama2} {
		var ids [][]uint32
		require.NoError(t, json.Unmarshal(golden[model], &ids))
		tok := texttest.Tokenizer(t, model)
		for i, s := range strs {
			want := ids[i]
			if want == nil {
				want = []uint32{}
			}
			require.Equal(t, want, tok.Encode(s, false), "%s %q", model, s)
		}
	}
}
