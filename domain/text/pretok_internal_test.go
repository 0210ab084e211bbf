package text

import (
	"encoding/json"
	"math/rand/v2"
	"os"
	"strings"
	"testing"

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
