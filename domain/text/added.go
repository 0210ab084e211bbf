package text

import (
	"sort"
	"strings"
)

// addedMatcher finds added tokens (special or not) in raw text, leftmost-longest, as HF's
// AddedVocabulary does before normalisation and pre-tokenisation. lstrip/rstrip absorb the
// whitespace beside a match.
type addedMatcher struct {
	byFirst [256][]addedTokenJSON // candidates by first byte, longest first
	firsts  string                // the distinct first bytes, for IndexAny
}

func newAddedMatcher(tokens []addedTokenJSON) *addedMatcher {
	m := &addedMatcher{}
	var firsts []byte
	for _, a := range tokens {
		if a.Content == "" {
			continue
		}
		b := a.Content[0]
		if len(m.byFirst[b]) == 0 {
			firsts = append(firsts, b)
		}
		m.byFirst[b] = append(m.byFirst[b], a)
	}
	for i := range m.byFirst {
		sort.SliceStable(m.byFirst[i], func(x, y int) bool {
			return len(m.byFirst[i][x].Content) > len(m.byFirst[i][y].Content)
		})
	}
	m.firsts = string(firsts)
	return m
}

// segment is a piece of input: either plain text to normalise and BPE, or one added token.
type segment struct {
	text  string
	id    uint32
	added bool
}

// split cuts s into plain and added-token segments, in order.
func (m *addedMatcher) split(s string, out []segment) []segment {
	if m.firsts == "" {
		return append(out, segment{text: s})
	}
	plainStart, i := 0, 0
	for i < len(s) {
		j := indexAnyByte(s[i:], m.firsts)
		if j < 0 {
			break
		}
		i += j
		tok, ok := m.matchAt(s, i)
		if !ok {
			i++
			continue
		}
		start, end := i, i+len(tok.Content)
		if tok.LStrip {
			for start > plainStart && isASCIISpace(s[start-1]) {
				start--
			}
		}
		if tok.RStrip {
			for end < len(s) && isASCIISpace(s[end]) {
				end++
			}
		}
		if start > plainStart {
			out = append(out, segment{text: s[plainStart:start]})
		}
		out = append(out, segment{id: tok.ID, added: true})
		plainStart, i = end, end
	}
	if plainStart < len(s) {
		out = append(out, segment{text: s[plainStart:]})
	}
	return out
}

func (m *addedMatcher) matchAt(s string, i int) (addedTokenJSON, bool) {
	for _, a := range m.byFirst[s[i]] {
		if strings.HasPrefix(s[i:], a.Content) {
			return a, true
		}
	}
	return addedTokenJSON{}, false
}

func indexAnyByte(s, set string) int {
	if len(set) == 1 {
		return strings.IndexByte(s, set[0])
	}
	return strings.IndexAny(s, set)
}

func isASCIISpace(b byte) bool { return b == ' ' || b == '\t' || b == '\n' || b == '\r' }
