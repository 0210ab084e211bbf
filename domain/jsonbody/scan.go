package jsonbody

import (
	"errors"
	"fmt"
)

// MaxDepth is the deepest nesting of arrays and objects a body may have, the same bound
// encoding/json enforces (json.Valid rejects deeper documents).
const MaxDepth = 10000

// ErrInvalidJSON is wrapped by every *SyntaxError: the input is not one valid JSON document.
var ErrInvalidJSON = errors.New("invalid JSON")

// ErrNotObject is wrapped by Parse's error when the input is valid JSON but its top-level
// value is not an object (an array, string, number, bool or null).
var ErrNotObject = errors.New("JSON body is not an object")

// SyntaxError reports where and why a document failed validation. It wraps ErrInvalidJSON.
type SyntaxError struct {
	// Offset is the byte offset of the offending byte (len(input) for an unexpected end).
	Offset int
	// Msg describes the problem, e.g. "invalid character 'x' looking for beginning of value".
	Msg string
}

// Error implements error: "invalid JSON at byte <offset>: <msg>".
func (e *SyntaxError) Error() string {
	return fmt.Sprintf("invalid JSON at byte %d: %s", e.Offset, e.Msg)
}

// Unwrap returns ErrInvalidJSON so errors.Is(err, ErrInvalidJSON) holds.
func (e *SyntaxError) Unwrap() error { return ErrInvalidJSON }

func syntaxErr(b []byte, i int, what string) error {
	if i >= len(b) {
		return &SyntaxError{Offset: len(b), Msg: "unexpected end of JSON input"}
	}
	return &SyntaxError{Offset: i, Msg: fmt.Sprintf("invalid character %q %s", b[i], what)}
}

func isWS(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func skipWS(b []byte, i int) int {
	for i < len(b) && isWS(b[i]) {
		i++
	}
	return i
}

// Valid reports whether b is exactly one valid JSON value (surrounding whitespace allowed),
// with the same acceptance as encoding/json.Valid.
func Valid(b []byte) bool {
	i := skipWS(b, 0)
	end, err := scanValue(b, i, 0)
	return err == nil && skipWS(b, end) == len(b)
}

// scanValue validates the JSON value starting at b[i] (no leading whitespace) and returns the
// offset just past it. depth is the nesting depth of the enclosing container.
func scanValue(b []byte, i, depth int) (int, error) {
	if i >= len(b) {
		return i, syntaxErr(b, i, "")
	}
	switch c := b[i]; {
	case c == '"':
		end, _, err := scanString(b, i)
		return end, err
	case c == '{':
		return scanObject(b, i, depth+1)
	case c == '[':
		return scanArray(b, i, depth+1)
	case c == '-' || (c >= '0' && c <= '9'):
		return scanNumber(b, i)
	case c == 't':
		return scanLiteral(b, i, "true")
	case c == 'f':
		return scanLiteral(b, i, "false")
	case c == 'n':
		return scanLiteral(b, i, "null")
	}
	return i, syntaxErr(b, i, "looking for beginning of value")
}

func scanLiteral(b []byte, i int, lit string) (int, error) {
	for k := 0; k < len(lit); k++ {
		if i+k >= len(b) || b[i+k] != lit[k] {
			return i + k, syntaxErr(b, i+k, "in literal "+lit)
		}
	}
	return i + len(lit), nil
}

// scanString validates the string starting at the quote b[i] and returns the offset past the
// closing quote and whether the body contains a backslash escape.
func scanString(b []byte, i int) (end int, escaped bool, err error) {
	i++ // opening quote
	for i < len(b) {
		// Fast path: skip ordinary bytes eight at a time, then one at a time.
		for i+8 <= len(b) && !strSpecial[b[i]] && !strSpecial[b[i+1]] && !strSpecial[b[i+2]] &&
			!strSpecial[b[i+3]] && !strSpecial[b[i+4]] && !strSpecial[b[i+5]] &&
			!strSpecial[b[i+6]] && !strSpecial[b[i+7]] {
			i += 8
		}
		for i < len(b) && !strSpecial[b[i]] {
			i++
		}
		if i >= len(b) {
			break
		}
		c := b[i]
		switch {
		case c == '"':
			return i + 1, escaped, nil
		case c == '\\':
			escaped = true
			if i+1 >= len(b) {
				return len(b), escaped, syntaxErr(b, len(b), "")
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				for k := 2; k < 6; k++ {
					if i+k >= len(b) {
						return len(b), escaped, syntaxErr(b, len(b), "")
					}
					if !isHex(b[i+k]) {
						return i + k, escaped, syntaxErr(b, i+k, "in \\u hexadecimal character escape")
					}
				}
				i += 6
			default:
				return i + 1, escaped, syntaxErr(b, i+1, "in string escape code")
			}
		case c < 0x20:
			return i, escaped, syntaxErr(b, i, "in string literal")
		default:
			i++
		}
	}
	return i, escaped, syntaxErr(b, i, "")
}

// strSpecial marks the bytes that end the fast path inside a string: '"', '\\' and controls.
var strSpecial = func() (t [256]bool) {
	for c := range 0x20 {
		t[c] = true
	}
	t['"'], t['\\'] = true, true
	return t
}()

func isHex(c byte) bool {
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// scanNumber validates -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)? at b[i].
func scanNumber(b []byte, i int) (int, error) {
	if b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		for i < len(b) && isDigit(b[i]) {
			i++
		}
	default:
		return i, syntaxErr(b, i, "in numeric literal")
	}
	if i < len(b) && b[i] == '.' {
		i++
		if i >= len(b) || !isDigit(b[i]) {
			return i, syntaxErr(b, i, "after decimal point in numeric literal")
		}
		for i < len(b) && isDigit(b[i]) {
			i++
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if i >= len(b) || !isDigit(b[i]) {
			return i, syntaxErr(b, i, "in exponent of numeric literal")
		}
		for i < len(b) && isDigit(b[i]) {
			i++
		}
	}
	return i, nil
}

func scanArray(b []byte, i, depth int) (int, error) {
	if depth > MaxDepth {
		return i, &SyntaxError{Offset: i, Msg: "exceeded max depth"}
	}
	i = skipWS(b, i+1)
	if i < len(b) && b[i] == ']' {
		return i + 1, nil
	}
	for {
		end, err := scanValue(b, i, depth)
		if err != nil {
			return end, err
		}
		i = skipWS(b, end)
		if i >= len(b) {
			return i, syntaxErr(b, i, "")
		}
		switch b[i] {
		case ',':
			i = skipWS(b, i+1)
		case ']':
			return i + 1, nil
		default:
			return i, syntaxErr(b, i, "after array element")
		}
	}
}

func scanObject(b []byte, i, depth int) (int, error) {
	if depth > MaxDepth {
		return i, &SyntaxError{Offset: i, Msg: "exceeded max depth"}
	}
	i = skipWS(b, i+1)
	if i < len(b) && b[i] == '}' {
		return i + 1, nil
	}
	for {
		if i >= len(b) || b[i] != '"' {
			return i, syntaxErr(b, i, "looking for beginning of object key string")
		}
		end, _, err := scanString(b, i)
		if err != nil {
			return end, err
		}
		i = skipWS(b, end)
		if i >= len(b) || b[i] != ':' {
			return i, syntaxErr(b, i, "after object key")
		}
		i = skipWS(b, i+1)
		end, err = scanValue(b, i, depth)
		if err != nil {
			return end, err
		}
		i = skipWS(b, end)
		if i >= len(b) {
			return i, syntaxErr(b, i, "")
		}
		switch b[i] {
		case ',':
			i = skipWS(b, i+1)
		case '}':
			return i + 1, nil
		default:
			return i, syntaxErr(b, i, "after object key:value pair")
		}
	}
}

// skipTrusted returns the end of the value at b[i] in an already validated document. It never
// reads out of bounds, even on invalid input (it then returns some offset <= len(b)).
func skipTrusted(b []byte, i int) int {
	if i >= len(b) {
		return len(b)
	}
	switch b[i] {
	case '"':
		i++
		for i < len(b) {
			switch b[i] {
			case '\\':
				i += 2
			case '"':
				return i + 1
			default:
				i++
			}
		}
		return len(b)
	case '{', '[':
		depth := 0
		for i < len(b) {
			switch b[i] {
			case '{', '[':
				depth++
				i++
			case '}', ']':
				depth--
				i++
				if depth == 0 {
					return i
				}
			case '"':
				i = skipTrusted(b, i)
			default:
				i++
			}
		}
		return len(b)
	default:
		for i < len(b) {
			switch b[i] {
			case ',', ']', '}', ' ', '\t', '\n', '\r':
				return i
			}
			i++
		}
		return len(b)
	}
}
