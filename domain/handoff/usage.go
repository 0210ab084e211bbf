package handoff

import (
	"bytes"

	"github.com/smg-go/smg/domain/jsonbody"
)

// PromptUsage is what the prefill engine computed for a request's prompt: the prompt
// tokens and how many of them its own prefix cache already held. In PD the decode engine
// receives the prompt's KV through the handoff and reports the whole prompt as cached, so
// the client must be told the prefill's numbers instead (SMG users reported decode usage
// with cached_tokens == prompt_tokens for cold prompts: sgl-project/sglang#10513,
// vllm-project/router#193).
type PromptUsage struct {
	Prompt int64
	// Cached is valid when HasCached: the engine reported a cached count.
	Cached    int64
	HasCached bool
}

// usagePaths says where a route's usage object sits, and its key names: OpenAI chat and
// completions `usage.{prompt_tokens, prompt_tokens_details.cached_tokens, total_tokens}`;
// SGLang /generate `meta_info.{prompt_tokens, cached_tokens}`; Anthropic messages
// `usage.{input_tokens, cache_read_input_tokens}` (streams: `message.usage` of
// message_start); Responses `usage.{input_tokens, input_tokens_details.cached_tokens,
// total_tokens}` (streams: `response.usage` of response.completed).
type usagePaths struct {
	wrap           string // the streaming event's wrapper object ("" none)
	obj            string
	prompt, total  string
	details        string // "" when cached sits in obj itself
	cached         string
	completionKeys []string // what total is the sum of, with prompt
}

func pathsFor(r Route) (usagePaths, bool) {
	switch r {
	case RouteChat, RouteCompletions:
		return usagePaths{obj: "usage", prompt: "prompt_tokens", total: "total_tokens", details: "prompt_tokens_details",
			cached: "cached_tokens", completionKeys: []string{"completion_tokens"}}, true
	case RouteGenerate:
		return usagePaths{obj: "meta_info", prompt: "prompt_tokens", cached: "cached_tokens"}, true
	case RouteMessages:
		return usagePaths{wrap: "message", obj: "usage", prompt: "input_tokens", cached: "cache_read_input_tokens"}, true
	case RouteResponses:
		return usagePaths{wrap: "response", obj: "usage", prompt: "input_tokens", total: "total_tokens",
			details: "input_tokens_details", cached: "cached_tokens", completionKeys: []string{"output_tokens"}}, true
	}
	return usagePaths{}, false
}

// usageIn finds the usage object of v, one complete JSON value that Parse or Valid
// accepted (a body or an SSE event's data), at the top level or inside the route's
// streaming wrapper. It reads the members in place (jsonbody.Member), so no index is built
// for the nested objects.
func usageIn(ps usagePaths, v []byte) (wrapped bool, usage []byte, ok bool) {
	if raw, ok := jsonbody.Member(v, ps.obj); ok && jsonbody.KindOf(raw) == jsonbody.KindObject {
		return false, raw, true
	}
	if ps.wrap != "" {
		if w, ok := jsonbody.Member(v, ps.wrap); ok {
			if raw, ok := jsonbody.Member(w, ps.obj); ok && jsonbody.KindOf(raw) == jsonbody.KindObject {
				return true, raw, true
			}
		}
	}
	return false, nil, false
}

// MayCarryUsage is a cheap pre-check: whether a JSON value can hold a usage object at all.
func MayCarryUsage(v []byte) bool {
	return bytes.Contains(v, []byte(`"usage"`)) || bytes.Contains(v, []byte(`"meta_info"`))
}

// PrefillUsage reads the prompt usage of a prefill answer: one complete JSON value (the
// body, or the data of the stream event that carries usage) of route r. ok is false when it
// carries none (a stream without include_usage, a batch).
func PrefillUsage(r Route, v []byte) (u PromptUsage, ok bool) {
	ps, known := pathsFor(r)
	if !known || !MayCarryUsage(v) {
		return u, false
	}
	if !jsonbody.Valid(v) {
		return u, false
	}
	_, uo, found := usageIn(ps, v)
	if !found {
		return u, false
	}
	raw, has := jsonbody.Member(uo, ps.prompt)
	if !has {
		return u, false
	}
	if u.Prompt, ok = jsonbody.Int(raw); !ok {
		return u, false
	}
	cachedIn := uo
	if ps.details != "" {
		cachedIn, _ = jsonbody.Member(uo, ps.details) // not an object: no cached count
	}
	if raw, has := jsonbody.Member(cachedIn, ps.cached); has {
		u.Cached, u.HasCached = jsonbody.Int(raw)
	}
	return u, true
}

// RewriteUsage returns v (one complete JSON value of route r from the decode leg) with its
// prompt usage replaced by the prefill's: the prompt count, the cached count where the
// decode reported one (a null or absent cached count is set when the prefill reported it),
// and the total recomputed from the decode's completion count. Members and key order are
// kept. changed is false (and v returned as is) when v carries no usage.
func RewriteUsage(r Route, v []byte, u PromptUsage) (out []byte, changed bool) {
	ps, known := pathsFor(r)
	if !known || !MayCarryUsage(v) {
		return v, false
	}
	top, err := jsonbody.Parse(v)
	if err != nil {
		return v, false
	}
	wrapped, uo, found := usageIn(ps, v)
	if !found || !has(uo, ps.prompt) {
		return v, false
	}
	p := top.Edit()
	defer p.Release()
	holder := p
	if wrapped {
		w, err := p.Nested(ps.wrap)
		if err != nil {
			return v, false
		}
		holder = w
	}
	up, err := holder.Nested(ps.obj)
	if err != nil {
		return v, false
	}
	up.SetInt(ps.prompt, u.Prompt)
	if ps.total != "" && has(uo, ps.total) {
		total := u.Prompt
		for _, k := range ps.completionKeys {
			if raw, ok := jsonbody.Member(uo, k); ok {
				n, _ := jsonbody.Int(raw)
				total += n
			}
		}
		up.SetInt(ps.total, total)
	}
	if u.HasCached {
		if ps.details == "" {
			up.SetInt(ps.cached, u.Cached)
		} else if dp, err := up.Nested(ps.details); err == nil {
			dp.SetInt(ps.cached, u.Cached)
		}
	}
	return p.Bytes(), true
}

// NeedsPrefillUsage reports whether v, a complete JSON value of route r from the decode leg,
// carries a usage object whose cached count the decode reported (or left null beside its
// details key): only then does the relay wait for the prefill's numbers to rewrite it.
func NeedsPrefillUsage(r Route, v []byte) bool {
	ps, known := pathsFor(r)
	if !known || !MayCarryUsage(v) {
		return false
	}
	if !jsonbody.Valid(v) {
		return false
	}
	_, uo, found := usageIn(ps, v)
	if !found || !has(uo, ps.prompt) {
		return false
	}
	if ps.details != "" {
		return has(uo, ps.details)
	}
	return has(uo, ps.cached)
}

// has reports whether the validated object obj has a member key.
func has(obj []byte, key string) bool {
	_, ok := jsonbody.Member(obj, key)
	return ok
}

// EachDataLine calls fn with the payload of every `data:` line of span (complete lines, as
// LineGuard emits them).
func EachDataLine(span []byte, fn func(payload []byte)) {
	for len(span) > 0 {
		line := span
		if nl := bytes.IndexByte(span, '\n'); nl >= 0 {
			line, span = span[:nl], span[nl+1:]
		} else {
			span = nil
		}
		if p, ok := bytes.CutPrefix(bytes.TrimRight(line, "\r"), []byte("data:")); ok {
			fn(bytes.TrimLeft(p, " "))
		}
	}
}

// RewriteDataLines returns span with the payload of every data line for which rewrite
// returns a new value replaced (framing kept: "data: " + value + the line's ending); span
// itself when nothing changed.
func RewriteDataLines(span []byte, rewrite func(payload []byte) ([]byte, bool)) []byte {
	var out []byte
	rest, start := span, 0
	for len(rest) > 0 {
		line, next := rest, []byte(nil)
		if nl := bytes.IndexByte(rest, '\n'); nl >= 0 {
			line, next = rest[:nl+1], rest[nl+1:]
		}
		body := bytes.TrimRight(line, "\r\n")
		if p, ok := bytes.CutPrefix(body, []byte("data:")); ok {
			if nv, changed := rewrite(bytes.TrimLeft(p, " ")); changed {
				if out == nil {
					out = make([]byte, 0, len(span)+64)
				}
				out = append(out, span[start:len(span)-len(rest)]...)
				out = append(out, "data: "...)
				out = append(out, nv...)
				out = append(out, line[len(body):]...)
				start = len(span) - len(next)
			}
		}
		rest = next
	}
	if out == nil {
		return span
	}
	return append(out, span[start:]...)
}
