package respond

import (
	"strconv"
	"unicode/utf8"
)

// hexDigits are the digits of a \u00XX escape (lowercase, as encoding/json writes them).
const hexDigits = "0123456789abcdef"

// plainASCII marks the ASCII bytes encoding/json copies into a string as they are: not a
// control character, not '"' or '\\', and not '<', '>' or '&' (escaped for HTML).
var plainASCII = func() (t [utf8.RuneSelf]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\' && c != '<' && c != '>' && c != '&'
	}
	return t
}()

// appendJSONString appends s as a JSON string exactly as json.Marshal(s) writes it in this
// module (go.mod's go line picks encoding/json's defaults; under go 1.27 invalid UTF-8
// becomes a raw U+FFFD instead, and the fuzz test would fail on such a bump): '"'
// and '\\' escaped; \b, \f, \n, \r and \t by name; other control characters, '<', '>' and
// '&' as \u00XX; U+2028 and U+2029 as \u2028 and \u2029; each byte of invalid UTF-8 as
// the escape \ufffd; everything else copied. The streamed chunks' hot path uses it instead of a
// reflective Marshal per event (FuzzAppendJSONString holds it to json.Marshal).
func appendJSONString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if plainASCII[c] {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// chunkHead is the part of an OpenAI stream chunk that is the same in every event of a
// stream, up to the first choice's index: `data: {"id":…,"object":…,"created":…,"model":…,
// "choices":[{"index":` (the field order of completionBody and chatChunk).
func chunkHead(m Meta, object string) []byte {
	b := append(make([]byte, 0, 96+len(m.ID)+len(m.Model)), `data: {"id":`...)
	b = appendJSONString(b, m.ID)
	b = append(b, `,"object":`...)
	b = appendJSONString(b, object)
	b = append(b, `,"created":`...)
	b = strconv.AppendInt(b, m.Created, 10)
	b = append(b, `,"model":`...)
	b = appendJSONString(b, m.Model)
	return append(b, `,"choices":[{"index":`...)
}

// textChunk is the event of one choice whose delta is only text: head, the index, then
// field, the text as a JSON string, and tail. It is byte for byte what sseData writes for
// the same chunk (TestTextChunksMatchTheMarshalledOnes), without reflection and in one
// allocation.
func textChunk(head []byte, index int, field, text, tail string) []byte {
	out := make([]byte, 0, len(head)+len(field)+len(text)+len(tail)+24)
	out = append(out, head...)
	out = strconv.AppendInt(out, int64(index), 10)
	out = append(out, field...)
	out = appendJSONString(out, text)
	return append(out, tail...)
}
