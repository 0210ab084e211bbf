package text

import (
	"strings"
	"sync/atomic"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// Tokenizer encodes text to token ids and decodes ids to text for one model. It is immutable
// after Parse (UseCache only swaps the cache Encode consults, never its answers) and safe
// for concurrent use; load it once per model and share it (Registry).
type Tokenizer struct {
	vocab        map[string]uint32 // raw token bytes -> id (model vocabulary)
	merges       map[uint64]merge
	byteID       [256]uint32
	ignoreMerges bool
	nfc          bool
	split        splitter
	added        *addedMatcher
	addedIDs     map[string]uint32
	postNames    []string
	prefix       []uint32 // ids the post-processor puts first when add_special_tokens is set

	spm bool // SentencePiece-style: vocab is keyed by token string, see spm.go

	idBytes []string // id -> raw bytes (vocabulary) or content (added tokens)
	known   []bool
	special []bool

	cache atomic.Pointer[EncodeCache] // UseCache; nil: none
}

// Encode returns the token ids of s. addSpecialTokens applies the post-processor (Llama-3
// prepends <|begin_of_text|>; Qwen adds nothing). The gateway encodes chat prompts,
// completions and /generate text with addSpecialTokens=false (grpc.md §1.14). Added tokens
// written in s (e.g. "<|im_start|>") are always recognised, as HF does. With a cache
// (UseCache) the ids may come from it; they are the same. The result is the caller's.
func (t *Tokenizer) Encode(s string, addSpecialTokens bool) []uint32 {
	c := t.cache.Load()
	if c == nil {
		return t.encode(s, addSpecialTokens, nil)
	}
	if c.l0 != nil {
		k := cacheKey{tok: t, special: addSpecialTokens, text: s}
		if ids, ok := c.l0.get(k, nil); ok {
			return ids
		}
		out := t.encode(s, addSpecialTokens, c.l1)
		c.l0.put(k, out)
		return out
	}
	return t.encode(s, addSpecialTokens, c.l1)
}

// encode is Encode; l1 (may be nil) caches the plain pieces of an input that holds added
// tokens (each piece is encoded on its own, so its ids do not depend on its neighbours).
func (t *Tokenizer) encode(s string, addSpecialTokens bool, l1 *lru) []uint32 {
	out := make([]uint32, 0, len(s)/3+len(t.prefix)+1)
	if addSpecialTokens {
		out = append(out, t.prefix...)
	}
	var segBuf [16]segment
	segs := t.added.split(s, segBuf[:0])
	if len(segs) < 2 {
		l1 = nil // no added-token boundary: L0's case
	}
	for _, seg := range segs {
		if seg.added {
			out = append(out, seg.id)
			continue
		}
		if l1 != nil && len(seg.text) >= l1MinPiece {
			k := cacheKey{tok: t, text: seg.text}
			var ok bool
			if out, ok = l1.get(k, out); ok {
				continue
			}
			start := len(out)
			out = t.encodePiece(seg.text, out)
			l1.put(k, out[start:])
			continue
		}
		out = t.encodePiece(seg.text, out)
	}
	return out
}

// encodePiece appends the ids of a plain piece (no added tokens) to out.
func (t *Tokenizer) encodePiece(text string, out []uint32) []uint32 {
	if t.spm {
		return t.encodeSPM(text, out)
	}
	if t.nfc && !isASCII(text) {
		text = norm.NFC.String(text)
	}
	t.split(text, func(start, end int) { out = t.bpe(text[start:end], out) })
	return out
}

// Count returns len(Encode(s, addSpecialTokens)) (count_tokens, context-length checks).
func (t *Tokenizer) Count(s string, addSpecialTokens bool) int {
	return len(t.Encode(s, addSpecialTokens))
}

// Decode returns the text of ids. skipSpecialTokens drops added tokens marked special (HF's
// skip_special_tokens); ids outside the vocabulary are skipped, as HF does. Bytes that are not
// valid UTF-8 become U+FFFD, one per maximal invalid subsequence (Rust's from_utf8_lossy).
//
// SentencePiece-style tokenizers drop one leading space (their Strip decoder); AppendBytes and
// DecodeStream keep it, as text decoded after a prompt does.
func (t *Tokenizer) Decode(ids []uint32, skipSpecialTokens bool) string {
	b := t.AppendBytes(nil, ids, skipSpecialTokens)
	if t.spm && len(b) > 0 && b[0] == ' ' {
		b = b[1:]
	}
	return lossyUTF8(b)
}

// AppendBytes appends the raw bytes of ids to dst (no UTF-8 repair); see Decode.
func (t *Tokenizer) AppendBytes(dst []byte, ids []uint32, skipSpecialTokens bool) []byte {
	for _, id := range ids {
		if int(id) >= len(t.known) || !t.known[id] || (skipSpecialTokens && t.special[id]) {
			continue
		}
		dst = append(dst, t.idBytes[id]...)
	}
	return dst
}

// TokenID returns the id of an added token's content or of a vocabulary token's raw text.
func (t *Tokenizer) TokenID(s string) (uint32, bool) {
	if id, ok := t.addedIDs[s]; ok {
		return id, true
	}
	id, ok := t.vocab[s]
	return id, ok
}

// IsSpecial reports whether id is an added token marked special.
func (t *Tokenizer) IsSpecial(id uint32) bool { return int(id) < len(t.special) && t.special[id] }

// VocabSize is one more than the largest id (vocabulary and added tokens).
func (t *Tokenizer) VocabSize() int { return len(t.idBytes) }

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// lossyUTF8 converts b to a string, replacing each maximal invalid subsequence with U+FFFD
// (the Unicode "substitution of maximal subparts" practice Rust's from_utf8_lossy follows).
func lossyUTF8(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	var sb strings.Builder
	sb.Grow(len(b) + 8)
	for i := 0; i < len(b); {
		r, w := utf8.DecodeRune(b[i:])
		if r != utf8.RuneError || w > 1 {
			sb.Write(b[i : i+w])
			i += w
			continue
		}
		sb.WriteRune(utf8.RuneError)
		i += maximalSubpart(b[i:])
	}
	return sb.String()
}

// maximalSubpart is the length of the invalid sequence at the start of b that one U+FFFD
// replaces: a lead byte plus the continuation bytes that could still have completed it.
func maximalSubpart(b []byte) int {
	c := b[0]
	var need int
	lo, hi := byte(0x80), byte(0xBF)
	switch {
	case c >= 0xC2 && c <= 0xDF:
		need = 1
	case c == 0xE0:
		need, lo = 2, 0xA0
	case c == 0xED:
		need, hi = 2, 0x9F
	case c >= 0xE1 && c <= 0xEF:
		need = 2
	case c == 0xF0:
		need, lo = 3, 0x90
	case c == 0xF4:
		need, hi = 3, 0x8F
	case c >= 0xF1 && c <= 0xF3:
		need = 3
	default:
		return 1
	}
	n := 1
	for k := 0; k < need && n < len(b); k++ {
		if b[n] < lo || b[n] > hi {
			break
		}
		lo, hi = 0x80, 0xBF
		n++
	}
	return n
}
