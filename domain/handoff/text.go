package handoff

import (
	"strings"

	"github.com/smg-go/smg/domain/jsonbody"
	"github.com/smg-go/smg/domain/wire"
)

// RoutingText extracts the text cache_aware and bucket route on (smg-spec.md §2.1 "routing
// text"; only call it when a leg's policy NeedsText, it allocates):
//   - /generate: "text" (the first element of a list);
//   - /v1/completions: "prompt" string, or its first element when that is a string;
//   - /v1/chat/completions: every message's content (a string, or the "text" of its text
//     parts) and "reasoning_content", joined by single spaces;
//   - /v1/messages: "system" then every message's content, the same way;
//   - /v1/responses: "input" string, or the contents of its items, joined the same way;
//   - /v1/rerank: "query".
//
// Empty pieces are skipped; a body without text gives "".
func (r *Request) RoutingText() string {
	o := r.Body
	switch r.Route {
	case RouteGenerate:
		return firstString(o, wire.FieldText)
	case RouteCompletions:
		return firstString(o, wire.FieldPrompt)
	case RouteRerank:
		raw, _ := o.Get(wire.FieldQuery)
		s, _ := jsonbody.String(raw)
		return s
	}
	var j joiner
	switch r.Route {
	case RouteChat:
		j.messages(o)
	case RouteMessages:
		raw, _ := o.Get(wire.FieldSystem)
		j.content(raw)
		j.messages(o)
	case RouteResponses:
		raw, _ := o.Get(wire.FieldInput)
		if s, ok := jsonbody.String(raw); ok {
			return s
		}
		for _, item := range jsonbody.Elements(raw) {
			if s, ok := jsonbody.String(item); ok {
				j.add(s)
				continue
			}
			j.contentOf(item)
		}
	}
	return j.b.String()
}

// firstString returns key's string value, or the first element of key's array when that is
// a string.
func firstString(o *jsonbody.Object, key string) string {
	raw, ok := o.Get(key)
	if !ok {
		return ""
	}
	if s, ok := jsonbody.String(raw); ok {
		return s
	}
	for _, e := range jsonbody.Elements(raw) {
		s, _ := jsonbody.String(e)
		return s
	}
	return ""
}

type joiner struct{ b strings.Builder }

func (j *joiner) add(s string) {
	if s == "" {
		return
	}
	if j.b.Len() > 0 {
		j.b.WriteByte(' ')
	}
	j.b.WriteString(s)
}

// messages adds the content and reasoning_content of every element of "messages".
func (j *joiner) messages(o *jsonbody.Object) {
	raw, _ := o.Get(wire.FieldMessages)
	for _, m := range jsonbody.Elements(raw) {
		j.contentOf(m)
	}
}

// contentOf adds an object's "content" and "reasoning_content".
func (j *joiner) contentOf(obj []byte) {
	if jsonbody.KindOf(obj) != jsonbody.KindObject {
		return
	}
	mo, err := jsonbody.Parse(obj)
	if err != nil {
		return
	}
	c, _ := mo.Get(wire.FieldContent)
	j.content(c)
	rc, _ := mo.Get(wire.FieldReasoningContent)
	s, _ := jsonbody.String(rc)
	j.add(s)
}

// content adds a content value: a string, or the "text" of each text-like part
// ("text", "input_text", "output_text", or untyped).
func (j *joiner) content(raw []byte) {
	if s, ok := jsonbody.String(raw); ok {
		j.add(s)
		return
	}
	for _, part := range jsonbody.Elements(raw) {
		if jsonbody.KindOf(part) != jsonbody.KindObject {
			continue
		}
		po, err := jsonbody.Parse(part)
		if err != nil {
			continue
		}
		if t, ok := po.Get(wire.FieldType); ok {
			switch ts, _ := jsonbody.String(t); ts {
			case "text", "input_text", "output_text":
			default:
				continue
			}
		}
		txt, _ := po.Get(wire.FieldText)
		s, _ := jsonbody.String(txt)
		j.add(s)
	}
}
