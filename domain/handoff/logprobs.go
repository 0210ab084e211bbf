package handoff

import (
	"bytes"

	"github.com/smg-go/smg/domain/jsonbody"
	"github.com/smg-go/smg/domain/wire"
)

// PrefillLogprobs extracts meta_info.input_token_logprobs (a JSON array, raw) from a
// prefill body: a JSON object (non-streaming), or an SSE stream (the prefill leg of a
// streaming request streams too), where the first event carrying the array wins
// (engines.md §2.3 item 5: "for streaming takes them from P's first chunk"). ok is false
// when the body has no such array or does not parse.
func PrefillLogprobs(prefillBody []byte) (raw []byte, ok bool) {
	trimmed := bytes.TrimLeft(prefillBody, " \t\r\n")
	if len(trimmed) > 0 && trimmed[0] == '{' {
		o, err := jsonbody.Parse(prefillBody)
		if err != nil {
			return nil, false
		}
		return inputLogprobs(o)
	}
	var sp EventSplitter
	sp.Max = len(prefillBody) + 1
	_ = sp.Write(prefillBody)
	for {
		ev, more := sp.Next()
		if !more {
			ev = sp.Flush()
			if len(ev) == 0 {
				return nil, false
			}
			ev = append(bytes.TrimRight(ev, "\r\n"), '\n', '\n') // an unterminated last event counts
		}
		if data, ok := EventData(ev); ok {
			if o, err := jsonbody.Parse(data); err == nil {
				if raw, ok := inputLogprobs(o); ok {
					return raw, true
				}
			}
		}
		if !more {
			return nil, false
		}
	}
}

// inputLogprobs returns meta_info.input_token_logprobs when it is an array.
func inputLogprobs(o *jsonbody.Object) ([]byte, bool) {
	mi, ok := o.Get(wire.FieldMetaInfo)
	if !ok || jsonbody.KindOf(mi) != jsonbody.KindObject {
		return nil, false
	}
	mo, err := jsonbody.Parse(mi)
	if err != nil {
		return nil, false
	}
	lp, ok := mo.Get(wire.FieldInputTokenLogprobs)
	if !ok || jsonbody.KindOf(lp) != jsonbody.KindArray {
		return nil, false
	}
	return lp, true
}

// MergeLogprobs returns the non-streaming decode body with meta_info.input_token_logprobs
// replaced by the prefill's elements followed by the decode's (smg-spec.md §2.8.3, §2.9;
// prefill first, nothing else merged). prefillLogprobs is PrefillLogprobs' result. When the
// merge cannot happen — the decode body does not parse or is not an object, either array is
// missing — it returns decodeBody unchanged and merged = false; the caller still answers
// with application/json (seed "Non-streaming HTTP responses keep a JSON content type").
func MergeLogprobs(prefillLogprobs, decodeBody []byte) (out []byte, merged bool) {
	if jsonbody.KindOf(prefillLogprobs) != jsonbody.KindArray {
		return decodeBody, false
	}
	o, err := jsonbody.Parse(decodeBody)
	if err != nil {
		return decodeBody, false
	}
	patched, ok := mergeInto(o, prefillLogprobs)
	if !ok {
		return decodeBody, false
	}
	return patched.Bytes(), true
}

// mergeInto prepares the patch of o that prepends prefill to its input_token_logprobs.
func mergeInto(o *jsonbody.Object, prefill []byte) (*jsonbody.Patch, bool) {
	decodeLP, ok := inputLogprobs(o)
	if !ok {
		return nil, false
	}
	p := o.Edit()
	mi, err := p.Nested(wire.FieldMetaInfo)
	if err != nil {
		return nil, false
	}
	mi.Set(wire.FieldInputTokenLogprobs, concatArrays(prefill, decodeLP))
	return p, true
}

// MergeLogprobsEvent applies the merge to one decode SSE event (as framed by
// EventSplitter): an event that is a single "data:" line with a JSON object carrying
// meta_info.input_token_logprobs is re-emitted as "data: <merged>\n\n"; every other event —
// "[DONE]", comments, other payloads — is returned unchanged with merged = false
// (smg-spec.md §2.8.2, §11.2 T-HTTP-2).
func MergeLogprobsEvent(prefillLogprobs, event []byte) (out []byte, merged bool) {
	data, ok := EventData(event)
	if !ok || string(data) == wire.SSEDone || jsonbody.KindOf(prefillLogprobs) != jsonbody.KindArray {
		return event, false
	}
	o, err := jsonbody.Parse(data)
	if err != nil {
		return event, false
	}
	p, ok := mergeInto(o, prefillLogprobs)
	if !ok {
		return event, false
	}
	buf := make([]byte, 0, p.Len()+8)
	buf = append(buf, "data: "...)
	buf = p.AppendTo(buf)
	return append(buf, '\n', '\n'), true
}

// concatArrays joins two raw JSON arrays into one: a's elements then b's.
func concatArrays(a, b []byte) []byte {
	ai, bi := arrayInner(a), arrayInner(b)
	out := make([]byte, 0, len(ai)+len(bi)+3)
	out = append(out, '[')
	out = append(out, ai...)
	if len(ai) > 0 && len(bi) > 0 {
		out = append(out, ',')
	}
	out = append(out, bi...)
	return append(out, ']')
}

// arrayInner is the text between an array's brackets, trimmed of whitespace.
func arrayInner(a []byte) []byte {
	a = bytes.TrimSpace(a)
	if len(a) < 2 {
		return nil
	}
	return bytes.TrimSpace(a[1 : len(a)-1])
}
