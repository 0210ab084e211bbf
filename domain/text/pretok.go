package text

import (
	"fmt"
	"unicode"
	"unicode/utf8"

	"github.com/dlclark/regexp2"
)

// The Split pre-tokenizer patterns of the two byte-level BPE families the gateway serves, as they
// appear in tokenizer.json. Both are scanned by hand (splitPattern): the regexp2 engine that
// can run them (RE2 has no lookahead) measured 0.34–0.67 M tokens/s on a 4 KB prompt here
// (shared/reference/grpc.md §2.2), below the ≥ 1 M tokens/s the gRPC path needs. Any other
// Split pattern runs through regexp2, exact but slower.
const (
	// PatternQwen2 is Qwen2/2.5/3's pattern: single digits.
	PatternQwen2 = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	// PatternLlama3 is Llama-3.x's (and cl100k's) pattern: digits in runs of at most three.
	PatternLlama3 = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
)

// splitter cuts normalised text into pre-tokens and calls emit with each piece's byte range.
type splitter func(s string, emit func(start, end int))

// newSplitter returns the scanner for pattern: the hand-written one for the two known patterns,
// else a regexp2 matcher with the pattern's own semantics (Isolated behaviour: unmatched gaps
// become pieces too).
func newSplitter(pattern string) (splitter, error) {
	switch pattern {
	case PatternQwen2:
		return func(s string, emit func(int, int)) { splitPattern(s, 1, emit) }, nil
	case PatternLlama3:
		return func(s string, emit func(int, int)) { splitPattern(s, 3, emit) }, nil
	}
	re, err := regexp2.Compile(pattern, regexp2.None)
	if err != nil {
		return nil, fmt.Errorf("text: pre-tokenizer regex %q: %w", pattern, err)
	}
	return func(s string, emit func(int, int)) { splitRegexp(re, s, emit) }, nil
}

// splitRegexp runs a regexp2 Split with behaviour Isolated. regexp2 reports rune offsets, so
// they are mapped back to byte offsets.
func splitRegexp(re *regexp2.Regexp, s string, emit func(int, int)) {
	runeByte := make([]int, 0, len(s)+1)
	for i := range s {
		runeByte = append(runeByte, i)
	}
	runeByte = append(runeByte, len(s))
	last := 0
	m, _ := re.FindStringMatch(s)
	for m != nil {
		start, end := runeByte[m.Index], runeByte[m.Index+m.Length]
		if start > last {
			emit(last, start)
		}
		if end > start {
			emit(start, end)
		}
		last = end
		m, _ = re.FindNextMatch(m)
	}
	if last < len(s) {
		emit(last, len(s))
	}
}

// Rune classes of the patterns: \p{L}, \p{N}, \s (Unicode White_Space, as Oniguruma and Go's
// unicode.IsSpace define it) and everything else ("other").
const (
	clOther = iota
	clLetter
	clNumber
	clSpace
)

var asciiClass = func() (t [128]uint8) {
	for r := 0; r < 128; r++ {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z':
			t[r] = clLetter
		case r >= '0' && r <= '9':
			t[r] = clNumber
		case r == ' ', r >= '\t' && r <= '\r':
			t[r] = clSpace
		}
	}
	return
}()

func classOf(r rune) uint8 {
	if r < utf8.RuneSelf {
		return asciiClass[r]
	}
	switch {
	case unicode.IsLetter(r):
		return clLetter
	case unicode.IsNumber(r):
		return clNumber
	case unicode.IsSpace(r):
		return clSpace
	}
	return clOther
}

func decodeAt(s string, i int) (rune, int) {
	if c := s[i]; c < utf8.RuneSelf {
		return rune(c), 1
	}
	return utf8.DecodeRuneInString(s[i:])
}

func isNewline(r rune) bool { return r == '\r' || r == '\n' }

// splitPattern scans s with the semantics of PatternQwen2 (maxDigits 1) or PatternLlama3
// (maxDigits 3): at each position the first alternative that matches wins, exactly as the
// backtracking regex engines (Oniguruma in HF tokenizers) do.
func splitPattern(s string, maxDigits int, emit func(start, end int)) {
	i := 0
	for i < len(s) {
		c, w := decodeAt(s, i)
		cl := classOf(c)
		// 1. (?i:'s|'t|'re|'ve|'m|'ll|'d)
		if c == '\'' {
			if n := contractionLen(s[i+1:]); n > 0 {
				emit(i, i+1+n)
				i += 1 + n
				continue
			}
		}
		// 2. [^\r\n\p{L}\p{N}]?\p{L}+
		if cl == clLetter {
			j := scanClass(s, i, clLetter, -1)
			emit(i, j)
			i = j
			continue
		}
		next, nextCl := rune(-1), uint8(clOther)
		if i+w < len(s) {
			next, _ = decodeAt(s, i+w)
			nextCl = classOf(next)
		}
		if cl != clNumber && !isNewline(c) && nextCl == clLetter && next >= 0 {
			j := scanClass(s, i+w, clLetter, -1)
			emit(i, j)
			i = j
			continue
		}
		// 3. \p{N} or \p{N}{1,3}
		if cl == clNumber {
			j := scanClass(s, i, clNumber, maxDigits)
			emit(i, j)
			i = j
			continue
		}
		// 4. ' '?[^\s\p{L}\p{N}]+[\r\n]*
		if cl == clOther || (c == ' ' && next >= 0 && nextCl == clOther) {
			j := i
			if c == ' ' {
				j += w
			}
			j = scanClass(s, j, clOther, -1)
			for j < len(s) && (s[j] == '\r' || s[j] == '\n') {
				j++
			}
			emit(i, j)
			i = j
			continue
		}
		// cl == clSpace: 5. \s*[\r\n]+  6. \s+(?!\S)  7. \s+
		j, lastNL, lastStart, runes := i, -1, i, 0
		for j < len(s) {
			r, rw := decodeAt(s, j)
			if classOf(r) != clSpace {
				break
			}
			if isNewline(r) {
				lastNL = j
			}
			lastStart = j
			j += rw
			runes++
		}
		switch {
		case lastNL >= 0:
			j = lastNL + 1
		case j < len(s) && runes >= 2:
			j = lastStart
		}
		emit(i, j)
		i = j
	}
}

// scanClass returns the end of the run of runes of class cl starting at i, at most max runes
// (max < 0: unbounded).
func scanClass(s string, i int, cl uint8, max int) int {
	n := 0
	for i < len(s) && (max < 0 || n < max) {
		r, w := decodeAt(s, i)
		if classOf(r) != cl {
			break
		}
		i += w
		n++
	}
	return i
}

// contractionLen reports how many bytes after an apostrophe form a contraction suffix
// (s, t, re, ve, m, ll, d; ASCII case-insensitive), or 0.
func contractionLen(s string) int {
	if len(s) == 0 {
		return 0
	}
	lower := func(b byte) byte { return b | 0x20 }
	switch lower(s[0]) {
	case 's', 't', 'm', 'd':
		return 1
	case 'r', 'v':
		if len(s) > 1 && lower(s[1]) == 'e' {
			return 2
		}
	case 'l':
		if len(s) > 1 && lower(s[1]) == 'l' {
			return 2
		}
	}
	return 0
}
