package text

import "strings"

// fixWhitespace rewrites a chat template so that ardanlabs/jinja v1.8.0 renders Jinja2's
// whitespace exactly. HF renders with trim_blocks, lstrip_blocks and keep_trailing_newline off;
// the engine applies those rules to the nearest text segment even when an expression sits in
// between, so `{% for t in xs %}{{ t }}\n{% endfor %}` loses its newline (a known bug, also in
// v1.12.0). Here the Jinja2 rules (explicit -/+ markers, lstrip_blocks, trim_blocks, one
// trailing newline dropped, \r\n and \r read as \n) are applied while scanning, tags are written
// back without markers, comments are dropped, and every leading newline run and trailing
// whitespace run of a text is emitted as a string expression, which the engine's own trimming
// never touches; tojson(indent=N) is rewritten (rewriteIndentedTojson). ok is false for templates with {% raw %} blocks, which are left unchanged.
func fixWhitespace(src string) (out string, ok bool) {
	items, ok := scanTemplate(src)
	if !ok {
		return src, false
	}
	if n := len(items); n > 0 && items[n-1].kind == itemText {
		items[n-1].text = strings.TrimSuffix(items[n-1].text, "\n")
	}
	for i := range items {
		it := &items[i]
		if it.kind == itemText {
			continue
		}
		block := it.kind != itemExpr
		if i > 0 && items[i-1].kind == itemText {
			prev := &items[i-1]
			switch {
			case it.left == '-':
				prev.text = strings.TrimRight(prev.text, " \t\n\v\f")
			case block && it.left != '+':
				prev.text = lstripBlock(prev.text, i-1 == 0)
			}
		}
	}
	for i := range items {
		it := &items[i]
		if it.kind == itemText || i+1 >= len(items) || items[i+1].kind != itemText {
			continue
		}
		next := &items[i+1]
		switch {
		case it.right == '-':
			next.text = strings.TrimLeft(next.text, " \t\n\v\f")
		case it.kind != itemExpr && it.right != '+':
			next.text = strings.TrimPrefix(next.text, "\n")
		}
	}
	var b strings.Builder
	b.Grow(len(src) + len(src)/8)
	for _, it := range items {
		switch it.kind {
		case itemText:
			writeProtectedText(&b, it.text)
		case itemExpr:
			b.WriteString("{{")
			b.WriteString(rewriteIndentedTojson(it.inner))
			b.WriteString("}}")
		case itemStmt:
			b.WriteString("{%")
			b.WriteString(rewriteIndentedTojson(it.inner))
			b.WriteString("%}")
		}
	}
	return b.String(), true
}

// lstripBlock drops the spaces and tabs before a block tag when they start a line (or the
// template).
func lstripBlock(s string, atStart bool) string {
	t := strings.TrimRight(s, " \t")
	if len(t) == len(s) {
		return s
	}
	if (t == "" && atStart) || strings.HasSuffix(t, "\n") {
		return t
	}
	return s
}

// writeProtectedText writes text with its leading newlines and trailing whitespace as string
// expressions, so that the engine's trim rules find nothing to strip. A trailing "{" goes into
// the expression too: written before the next tag it would open "{{" or "{%".
func writeProtectedText(b *strings.Builder, s string) {
	lead := len(s) - len(strings.TrimLeft(s, "\n"))
	trail := len(s) - len(strings.TrimRight(s, " \t\n"))
	if trail < len(s) && s[len(s)-trail-1] == '{' {
		trail++
	}
	if lead+trail >= len(s) {
		writeStringExpr(b, s)
		return
	}
	writeStringExpr(b, s[:lead])
	b.WriteString(s[lead : len(s)-trail])
	writeStringExpr(b, s[len(s)-trail:])
}

func writeStringExpr(b *strings.Builder, s string) {
	if s == "" {
		return
	}
	b.WriteString(`{{ "`)
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '\n':
			b.WriteString(`\n`)
		case '\t':
			b.WriteString(`\t`)
		case '"', '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		default:
			b.WriteByte(c)
		}
	}
	b.WriteString(`" }}`)
}

const (
	itemText = iota
	itemExpr
	itemStmt
	itemComment
)

type tmplItem struct {
	kind        int
	text, inner string // text: the raw text; tags: what is between the markers
	left, right byte   // '-', '+' or 0
}

// scanTemplate splits src into text and tags the way Jinja2's lexer does with default
// delimiters, honouring quotes inside tags. ok is false for raw blocks and unclosed tags.
func scanTemplate(src string) ([]tmplItem, bool) {
	src = strings.ReplaceAll(strings.ReplaceAll(src, "\r\n", "\n"), "\r", "\n")
	var items []tmplItem
	textStart := 0
	for i := 0; i+1 < len(src); {
		if src[i] != '{' || (src[i+1] != '{' && src[i+1] != '%' && src[i+1] != '#') {
			i++
			continue
		}
		kind, closer := itemExpr, "}}"
		switch src[i+1] {
		case '%':
			kind, closer = itemStmt, "%}"
		case '#':
			kind, closer = itemComment, "#}"
		}
		if i > textStart {
			items = append(items, tmplItem{kind: itemText, text: src[textStart:i]})
		}
		j := i + 2
		it := tmplItem{kind: kind}
		if j < len(src) && (src[j] == '-' || src[j] == '+') {
			it.left = src[j]
			j++
		}
		start := j
		end := -1
		for j+1 < len(src) {
			c := src[j]
			if kind != itemComment && (c == '\'' || c == '"') {
				j++
				for j < len(src) && src[j] != c {
					if src[j] == '\\' {
						j++
					}
					j++
				}
				j++
				continue
			}
			if c == closer[0] && src[j+1] == closer[1] {
				end = j
				break
			}
			j++
		}
		if end < 0 {
			return nil, false
		}
		inner := src[start:end]
		if n := len(inner); n > 0 && (inner[n-1] == '-' || inner[n-1] == '+') {
			it.right = inner[n-1]
			inner = inner[:n-1]
		}
		it.inner = inner
		if kind == itemStmt {
			word := strings.Fields(inner)
			if len(word) > 0 && word[0] == "raw" {
				return nil, false
			}
		}
		items = append(items, it)
		i = end + 2
		textStart = i
	}
	if textStart < len(src) {
		items = append(items, tmplItem{kind: itemText, text: src[textStart:]})
	}
	return items, true
}
