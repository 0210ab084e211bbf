package text

import (
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/ardanlabs/jinja"
)

// ardanlabs/jinja v1.8.0 implements tojson(indent=N) with encoding/json, which sorts object
// keys and escapes < > &; HF's tojson is Python's json.dumps(ensure_ascii=False, indent=N),
// which keeps the keys in order. The engine offers no way to replace a filter, so
// rewriteIndentedTojson turns `operand | tojson(indent=N)` inside tags into a call of the
// context function indentedTojsonName (Llama-3.1/3.2 print their tools that way). The operand
// must be a variable path (t, tool.function, messages[0]['x']), which is what real templates use.
const indentedTojsonName = "__smg_tojson_indent"

var indentedTojson = regexp.MustCompile(`([A-Za-z_][\w]*(?:\.[A-Za-z_]\w*|\[[^\[\]]*\])*)\s*\|\s*tojson\(\s*indent\s*=\s*(\d+)\s*\)`)

func rewriteIndentedTojson(inner string) string {
	if !strings.Contains(inner, "tojson") {
		return inner
	}
	return indentedTojson.ReplaceAllString(inner, indentedTojsonName+"($1, $2)")
}

func indentedTojsonFunc(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
	if len(args) < 2 || !args[1].IsInt() {
		return jinja.Undefined(), nil
	}
	var b strings.Builder
	writePyJSON(&b, args[0], strings.Repeat(" ", int(args[1].AsInt())), "\n")
	return jinja.NewString(b.String()), nil
}

// writePyJSON writes v as Python's json.dumps(v, ensure_ascii=False, indent=...) does.
func writePyJSON(b *strings.Builder, v jinja.Value, indent, nl string) {
	inner := nl + indent
	switch {
	case v.IsDict():
		d := v.AsDict()
		keys := d.OrderedKeys()
		if len(keys) == 0 {
			b.WriteString("{}")
			return
		}
		b.WriteString("{")
		for i, k := range keys {
			if i > 0 {
				b.WriteString(",")
			}
			b.WriteString(inner)
			writePyString(b, k)
			b.WriteString(": ")
			val, _ := d.Get(k)
			writePyJSON(b, val, indent, inner)
		}
		b.WriteString(nl + "}")
	case v.IsList():
		items := v.AsList().Items
		if len(items) == 0 {
			b.WriteString("[]")
			return
		}
		b.WriteString("[")
		for i, it := range items {
			if i > 0 {
				b.WriteString(",")
			}
			b.WriteString(inner)
			writePyJSON(b, it, indent, inner)
		}
		b.WriteString(nl + "]")
	case v.IsString():
		writePyString(b, v.AsString())
	case v.IsBool():
		b.WriteString(strconv.FormatBool(v.AsBool()))
	case v.IsInt():
		b.WriteString(strconv.FormatInt(v.AsInt(), 10))
	case v.IsFloat():
		s := strconv.FormatFloat(v.AsFloat(), 'g', -1, 64)
		if !strings.ContainsAny(s, ".eEn") { // Python prints 1.0, not 1
			s += ".0"
		}
		b.WriteString(s)
	default: // None, undefined
		b.WriteString("null")
	}
}

// writePyString quotes s as json.dumps(ensure_ascii=False) does: only the quote, backslash and
// control characters are escaped.
func writePyString(b *strings.Builder, s string) {
	b.WriteByte('"')
	for i := 0; i < len(s); {
		r, w := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == '"':
			b.WriteString(`\"`)
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\b':
			b.WriteString(`\b`)
		case r == '\f':
			b.WriteString(`\f`)
		case r < 0x20:
			b.WriteString(`\u00`)
			b.WriteByte("0123456789abcdef"[r>>4])
			b.WriteByte("0123456789abcdef"[r&0xf])
		default:
			b.WriteString(s[i : i+w])
		}
		i += w
	}
	b.WriteByte('"')
}
