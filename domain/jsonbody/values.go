package jsonbody

import (
	"encoding/json"
	"iter"
	"math"
	"strconv"
	"unicode/utf8"
)

// Kind is the type of a raw JSON value, read from its first byte.
type Kind uint8

// The value kinds. KindInvalid is returned for empty input or a byte no JSON value starts with.
const (
	KindInvalid Kind = iota
	KindObject
	KindArray
	KindString
	KindNumber
	KindBool
	KindNull
)

// String returns the kind's name: "object", "array", "string", "number", "bool", "null" or
// "invalid".
func (k Kind) String() string {
	switch k {
	case KindObject:
		return "object"
	case KindArray:
		return "array"
	case KindString:
		return "string"
	case KindNumber:
		return "number"
	case KindBool:
		return "bool"
	case KindNull:
		return "null"
	}
	return "invalid"
}

// KindOf returns the kind of the raw value (leading whitespace skipped).
func KindOf(raw []byte) Kind {
	i := skipWS(raw, 0)
	if i >= len(raw) {
		return KindInvalid
	}
	switch c := raw[i]; {
	case c == '{':
		return KindObject
	case c == '[':
		return KindArray
	case c == '"':
		return KindString
	case c == 't' || c == 'f':
		return KindBool
	case c == 'n':
		return KindNull
	case c == '-' || isDigit(c):
		return KindNumber
	}
	return KindInvalid
}

// IsNull reports whether raw is the literal null.
func IsNull(raw []byte) bool { return string(raw) == "null" }

// Bool returns the value of a raw true or false literal; ok is false for anything else.
func Bool(raw []byte) (v, ok bool) {
	switch string(raw) {
	case "true":
		return true, true
	case "false":
		return false, true
	}
	return false, false
}

// Int returns the value of a raw JSON number that is an integer: an integer literal, or a
// fraction/exponent form with an integral value such as 2.0 or 1e3 (Python clients send
// those; pydantic accepts them). ok is false for non-numbers, non-integral values and values
// outside the int64 range.
func Int(raw []byte) (int64, bool) {
	if KindOf(raw) != KindNumber {
		return 0, false
	}
	if v, err := strconv.ParseInt(string(raw), 10, 64); err == nil {
		return v, true
	}
	f, err := strconv.ParseFloat(string(raw), 64)
	if err != nil || f != math.Trunc(f) || f < math.MinInt64 || f >= math.MaxInt64 {
		return 0, false
	}
	return int64(f), true
}

// String returns the decoded value of a raw JSON string literal, exactly as encoding/json
// decodes it (escapes resolved, invalid UTF-8 and lone surrogates replaced by U+FFFD); ok is
// false when raw is not a string literal.
func String(raw []byte) (string, bool) {
	if len(raw) < 2 || raw[0] != '"' || raw[len(raw)-1] != '"' {
		return "", false
	}
	return unquoteBytes(raw[1 : len(raw)-1]), true
}

// ArrayLen returns the number of elements of a raw JSON array; ok is false for other kinds.
func ArrayLen(raw []byte) (n int, ok bool) {
	if KindOf(raw) != KindArray {
		return 0, false
	}
	for range Elements(raw) {
		n++
	}
	return n, true
}

// IsArrayOfArrays reports whether raw is a non-empty array whose every element is an array,
// e.g. a batch of token-id lists [[1,2],[3]].
func IsArrayOfArrays(raw []byte) bool {
	if KindOf(raw) != KindArray {
		return false
	}
	n := 0
	for _, e := range Elements(raw) {
		if KindOf(e) != KindArray {
			return false
		}
		n++
	}
	return n > 0
}

// Elements iterates over the elements of a raw JSON array, yielding each index and raw
// element (aliasing raw). Nothing is yielded for non-arrays. raw must be valid JSON (for
// example a value returned by Object.Get); on invalid input the iteration stops early
// without panicking.
func Elements(raw []byte) iter.Seq2[int, []byte] {
	return func(yield func(int, []byte) bool) {
		i := skipWS(raw, 0)
		if i >= len(raw) || raw[i] != '[' {
			return
		}
		i = skipWS(raw, i+1)
		for n := 0; i < len(raw) && raw[i] != ']'; n++ {
			end := skipTrusted(raw, i)
			if end <= i || !yield(n, raw[i:end:end]) {
				return
			}
			i = skipWS(raw, end)
			if i < len(raw) && raw[i] == ',' {
				i = skipWS(raw, i+1)
			}
		}
	}
}

// unquoteBytes decodes the body of a JSON string (between the quotes) the way encoding/json
// does. The input must have passed scanString.
func unquoteBytes(s []byte) string {
	simple := true
	for i := 0; i < len(s); {
		c := s[i]
		if c == '\\' || c == '"' || c < 0x20 {
			simple = false
			break
		}
		if c < utf8.RuneSelf {
			i++
			continue
		}
		r, size := utf8.DecodeRune(s[i:])
		if r == utf8.RuneError && size == 1 {
			simple = false
			break
		}
		i += size
	}
	if simple {
		return string(s)
	}
	b := make([]byte, 0, len(s)+2*utf8.UTFMax)
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '\\':
			if i+1 >= len(s) {
				return string(b)
			}
			switch s[i+1] {
			case 'b':
				b = append(b, '\b')
			case 'f':
				b = append(b, '\f')
			case 'n':
				b = append(b, '\n')
			case 'r':
				b = append(b, '\r')
			case 't':
				b = append(b, '\t')
			case 'u':
				rr := getu4(s[i:])
				if rr < 0 {
					return string(b)
				}
				i += 6
				if rr >= 0xD800 && rr < 0xE000 {
					if rr < 0xDC00 {
						if rr1 := getu4(s[i:]); rr1 >= 0xDC00 && rr1 < 0xE000 {
							b = utf8.AppendRune(b, (rr-0xD800)<<10|(rr1-0xDC00)+0x10000)
							i += 6
							continue
						}
					}
					rr = utf8.RuneError
				}
				b = utf8.AppendRune(b, rr)
				continue
			default: // '"', '\\', '/'
				b = append(b, s[i+1])
			}
			i += 2
		case c < utf8.RuneSelf:
			b = append(b, c)
			i++
		default:
			r, size := utf8.DecodeRune(s[i:])
			b = utf8.AppendRune(b, r)
			i += size
		}
	}
	return string(b)
}

// getu4 decodes \uXXXX at the start of s, or returns -1.
func getu4(s []byte) rune {
	if len(s) < 6 || s[0] != '\\' || s[1] != 'u' {
		return -1
	}
	var r rune
	for _, c := range s[2:6] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			c = c - 'A' + 10
		default:
			return -1
		}
		r = r*16 + rune(c)
	}
	return r
}

const hexDigits = "0123456789abcdef"

// plain and htmlPlain mark the ASCII bytes AppendString and AppendStringHTML copy as they
// are: not a control character, not '"' or '\\' (and for HTML not '<', '>' or '&').
var plain, htmlPlain = func() (p, h [utf8.RuneSelf]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		p[c] = c != '"' && c != '\\'
		h[c] = p[c] && c != '<' && c != '>' && c != '&'
	}
	return p, h
}()

// AppendString appends s to dst as a JSON string literal: quotes, backslash and control
// characters escaped, invalid UTF-8 replaced by \ufffd, U+2028/U+2029 escaped (as
// encoding/json does); '<', '>' and '&' are written as is.
func AppendString(dst []byte, s string) []byte { return appendString(dst, s, &plain, `\ufffd`) }

// AppendStringHTML appends s to dst exactly as json.Marshal(s) writes it with the toolchain
// that built the binary: AppendString with '<', '>' and '&' escaped as \u003c, \u003e and
// \u0026, and each byte of invalid UTF-8 spelled as json.Marshal spells it (marshalInvalid).
// FuzzAppendStringHTML holds it to json.Marshal.
func AppendStringHTML(dst []byte, s string) []byte {
	return appendString(dst, s, &htmlPlain, marshalInvalid)
}

// marshalInvalid is how json.Marshal writes one byte of invalid UTF-8 inside a string: the
// escape \ufffd up to go1.26, a raw U+FFFD from go1.27 (encoding/json on top of
// encoding/json/v2), read once from json.Marshal itself.
var marshalInvalid = func() string {
	b, err := json.Marshal("\xff")
	if err != nil || len(b) < 2 {
		return `\ufffd`
	}
	return string(b[1 : len(b)-1])
}()

// appendString is AppendString with the ASCII bytes copied as they are given by keep and
// each byte of invalid UTF-8 written as invalid.
func appendString(dst []byte, s string, keep *[utf8.RuneSelf]bool, invalid string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if keep[c] {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, invalid...)
			i++
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// quotedLen is len(AppendString(nil, s)) without allocating.
func quotedLen(s string) int {
	n := 2
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\' || c == '\n' || c == '\r' || c == '\t' || c == '\b' || c == '\f':
				n += 2
			case c < 0x20:
				n += 6
			default:
				n++
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			n += 6
		case r == '\u2028' || r == '\u2029':
			n += 6
		default:
			n += size
		}
		i += size
	}
	return n
}
