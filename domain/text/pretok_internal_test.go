package text

import (
	"encoding/json"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/dlclark/regexp2"
	"github.com/stretchr/testify/require"
)

func pieces(split splitter, s string) []string {
	var out []string
	split(s, func(a, b int) { out = append(out, s[a:b]) })
	return out
}

// The hand-written scanners must cut exactly where the regex engine does, on the corpus and on
// random strings over an alphabet of the characters each alternative is sensitive to.
func TestHandWrittenSplitMatchesRegex(t *testing.T) {
	t.Parallel()
	var entries []struct{ Text string }
	data, err := os.ReadFile("testdata/corpus.json")
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(data, &entries))
	alphabet := []string{"a", "Z", "é", "你", "1", "٣", "Ⅻ", " ", "  ", "\t", "\n", "\r\n", "\u00a0", "\u3000",
		"'", "'s", "'LL", "'re", "ſ", "!", "...", "(", "\"", "-", "😀", "\u200d", "\u0301", "\x00", "_", "$"}
	rng := rand.New(rand.NewPCG(1, 2))
	inputs := []string{}
	for _, e := range entries {
		inputs = append(inputs, e.Text)
	}
	for i := 0; i < 3000; i++ {
		var sb strings.Builder
		for n := rng.IntN(12); n >= 0; n-- {
			sb.WriteString(alphabet[rng.IntN(len(alphabet))])
		}
		inputs = append(inputs, sb.String())
	}
	for _, pat := range []struct {
		pattern string
		digits  int
	}{{PatternQwen2, 1}, {PatternLlama3, 3}} {
		re := regexp2.MustCompile(pat.pattern, regexp2.None)
		viaRegex := func(s string, emit func(int, int)) { splitRegexp(re, s, emit) }
		hand := func(s string, emit func(int, int)) { splitPattern(s, pat.digits, emit) }
		for _, s := range inputs {
			require.Equal(t, pieces(viaRegex, s), pieces(hand, s), "pattern digits=%d input %q", pat.digits, s)
		}
	}
}

// FuzzSplitMatchesRegex: `go test -fuzz FuzzSplitMatchesRegex ./domain/text` searches for a
// string the hand-written scanners cut differently from regexp2; plain `go test` runs the seeds.
func FuzzSplitMatchesRegex(f *testing.F) {
	for _, s := range []string{"Hello, world!", "I'm 'LL  x\r\n\n  y", "你好 123456 ٣٤", " \t!!\n(a) 'sé\u0301", "a\u00a0 b\u3000c"} {
		f.Add(s)
	}
	reQwen := regexp2.MustCompile(PatternQwen2, regexp2.None)
	reLlama := regexp2.MustCompile(PatternLlama3, regexp2.None)
	f.Fuzz(func(t *testing.T, s string) {
		if !utf8.ValidString(s) {
			t.Skip()
		}
		for _, c := range []struct {
			re     *regexp2.Regexp
			digits int
		}{{reQwen, 1}, {reLlama, 3}} {
			want := pieces(func(s string, emit func(int, int)) { splitRegexp(c.re, s, emit) }, s)
			got := pieces(func(s string, emit func(int, int)) { splitPattern(s, c.digits, emit) }, s)
			if !slices.Equal(want, got) {
				t.Fatalf("digits=%d %q: regex %q, scanner %q", c.digits, s, want, got)
			}
		}
	})
}
