package text

import "unicode/utf8"

// DecodeStream turns generated token ids into text incrementally. It never emits part of a
// UTF-8 character: bytes of an incomplete trailing character are held until the next token
// completes them, and the concatenation of every Step plus Flush equals Decode of all ids.
//
// SMG's DecodeStream (crates/tokenizer/src/stream.rs) re-decodes a window (prefix offset =
// prompt length − 5) and emits the new suffix unless it ends in U+FFFD; for byte-level BPE,
// whose decode is plain byte concatenation, holding the incomplete tail gives the same text
// without re-decoding, and a U+FFFD the model really produced is not held back.
type DecodeStream struct {
	tok         *Tokenizer
	skipSpecial bool
	pending     []byte // undecided bytes: at most one incomplete character
}

// NewDecodeStream starts a stream for one sample. skipSpecialTokens drops added tokens marked
// special (the gateway always asks SGLang for skip_special_tokens=true, grpc.md §1.14).
func NewDecodeStream(tok *Tokenizer, skipSpecialTokens bool) *DecodeStream {
	return &DecodeStream{tok: tok, skipSpecial: skipSpecialTokens}
}

// Step adds one token and returns the text it completes ("" while a character is incomplete).
func (d *DecodeStream) Step(id uint32) string {
	d.pending = d.tok.AppendBytes(d.pending, []uint32{id}, d.skipSpecial)
	cut := completePrefix(d.pending)
	if cut == 0 {
		return ""
	}
	out := lossyUTF8(d.pending[:cut])
	d.pending = append(d.pending[:0], d.pending[cut:]...)
	return out
}

// Flush returns the held bytes at the end of the stream, an incomplete character as U+FFFD.
func (d *DecodeStream) Flush() string {
	out := lossyUTF8(d.pending)
	d.pending = d.pending[:0]
	return out
}

// completePrefix is the length of b without a trailing sequence that is a valid but incomplete
// start of a UTF-8 character. Bytes that can never become valid are not held (they decode to
// U+FFFD either way).
func completePrefix(b []byte) int {
	for back := 1; back <= 3 && back <= len(b); back++ {
		p := len(b) - back
		c := b[p]
		if c < 0x80 {
			return len(b)
		}
		if c < 0xC0 { // continuation byte: keep looking for its lead
			continue
		}
		if utf8.FullRune(b[p:]) {
			return len(b)
		}
		if maximalSubpart(b[p:]) == back { // lead + valid continuations, just short
			return p
		}
		return len(b)
	}
	return len(b)
}
