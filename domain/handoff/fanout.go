package handoff

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/smg-go/smg/domain/errs"
	"github.com/smg-go/smg/domain/jsonbody"
	"github.com/smg-go/smg/domain/wire"
)

// MaxSamples bounds the n of an n>1 request that SplitSamples fans out (OpenAI's own limit
// on n), so one request cannot turn into an unbounded number of dispatches.
const MaxSamples = 128

// SplitSamples turns an SGLang request with n>1 into n single-sample bodies, one per
// dispatch, each to get its own pair and room (issue #4 item 6: SGLang stalls the extra
// samples of one rendezvous over HTTP; the seed's gRPC path fans out the same way,
// "Parallel Sampling"). Sample i's body is the original with:
//   - "n": 1 (chat, completions) or "sampling_params.n": 1 (/generate);
//   - a string "rid" (or each string of a "rid" list) suffixed "-<i>", so the samples do not
//     collide as duplicate request ids on one engine;
//   - an integer "seed" (chat, completions) or "sampling_params.sampling_seed" (/generate)
//     offset by i, so pinned-seed samples still differ (as the seed's TokenSpeed fan-out).
//
// Key order and every other field are kept. With N == 1, or on a route without n, it
// returns the original body alone. Errors: *errs.Error 400 invalid_request when N exceeds
// MaxSamples, or when /generate "sampling_params" is not an object.
func SplitSamples(req *Request) ([]*jsonbody.Object, error) {
	if req.N <= 1 || !req.Route.Samples() {
		return []*jsonbody.Object{req.Body}, nil
	}
	if req.N > MaxSamples {
		return nil, errs.BadRequest("n=%d exceeds the gateway's fan-out limit of %d samples", req.N, MaxSamples)
	}
	out := make([]*jsonbody.Object, req.N)
	for i := range out {
		p := req.Body.Edit()
		if req.Route == RouteGenerate {
			sp, err := p.Nested(wire.FieldSamplingParams)
			if err != nil {
				return nil, errs.BadRequest("%q must be an object: %v", wire.FieldSamplingParams, err)
			}
			sp.SetInt(wire.FieldN, 1)
			offsetSeed(sp, wire.FieldSamplingSeed, i)
		} else {
			p.SetInt(wire.FieldN, 1)
			offsetSeed(p, wire.FieldSeed, i)
		}
		suffixRID(p, i)
		o, err := jsonbody.Parse(p.Bytes())
		if err != nil { // cannot happen: edits of a valid object stay valid
			return nil, fmt.Errorf("split sample %d: %w", i, err)
		}
		out[i] = o
	}
	return out, nil
}

func offsetSeed(p *jsonbody.Patch, key string, i int) {
	if i == 0 {
		return
	}
	raw, ok := p.Object().Get(key)
	if !ok {
		return
	}
	if v, ok := jsonbody.Int(raw); ok {
		p.SetInt(key, v+int64(i))
	}
}

func suffixRID(p *jsonbody.Patch, i int) {
	raw, ok := p.Object().Get(wire.FieldRID)
	if !ok {
		return
	}
	suffix := fmt.Sprintf("-%d", i)
	if s, ok := jsonbody.String(raw); ok {
		p.SetString(wire.FieldRID, s+suffix)
		return
	}
	if jsonbody.KindOf(raw) != jsonbody.KindArray {
		return
	}
	list := []byte{'['}
	for k, e := range jsonbody.Elements(raw) {
		if k > 0 {
			list = append(list, ',')
		}
		if s, ok := jsonbody.String(e); ok {
			list = jsonbody.AppendString(list, s+suffix)
		} else {
			list = append(list, e...)
		}
	}
	p.Set(wire.FieldRID, append(list, ']'))
}

// MergeSamples merges the n single-sample non-streaming responses (in sample order) of a
// fanned-out request into the response the client asked for:
//   - chat, completions: the first response with "choices" replaced by every response's
//     choices, each "index" rewritten to index*n + sample (the sample index for one
//     prompt) and sorted by it, and "usage" (when any response has one) with prompt_tokens
//     counted once, completion_tokens summed and total_tokens = prompt + completion; other
//     usage fields are the first response's;
//   - /generate: a JSON array of the responses' objects, prompt-major (element b*n + s is
//     sample s of prompt b; a response that is an array is one sample of a batch), which
//     is how SGLang answers n>1 itself (engines.md §2.2).
//
// Errors (plain, for a 502 at the edge): no bodies, a body that does not parse or lacks the
// expected shape, batches of different sizes, or a route without n.
func MergeSamples(route Route, bodies [][]byte) ([]byte, error) {
	if len(bodies) == 0 {
		return nil, fmt.Errorf("merge samples: no responses")
	}
	switch route {
	case RouteChat, RouteCompletions:
		return mergeChoices(bodies)
	case RouteGenerate:
		return mergeGenerate(bodies)
	}
	return nil, fmt.Errorf("merge samples: route %s has no samples", route)
}

type indexed struct {
	idx int64
	raw []byte
}

func mergeChoices(bodies [][]byte) ([]byte, error) {
	n := int64(len(bodies))
	var base *jsonbody.Object
	var all []indexed
	var usage usageSum
	for s, b := range bodies {
		o, err := jsonbody.Parse(b)
		if err != nil {
			return nil, fmt.Errorf("merge samples: response %d: %w", s, err)
		}
		if s == 0 {
			base = o
		}
		choices, ok := o.Get(wire.FieldChoices)
		if !ok || jsonbody.KindOf(choices) != jsonbody.KindArray {
			return nil, fmt.Errorf("merge samples: response %d has no choices array", s)
		}
		for _, c := range jsonbody.Elements(choices) {
			re, err := reindex(c, n, int64(s))
			if err != nil {
				return nil, fmt.Errorf("merge samples: response %d: %w", s, err)
			}
			all = append(all, re)
		}
		if u, ok := o.Get(wire.FieldUsage); ok {
			usage.add(u)
		}
	}
	slices.SortStableFunc(all, func(a, b indexed) int { return cmp.Compare(a.idx, b.idx) })
	p := base.Edit()
	p.Set(wire.FieldChoices, joinArray(all))
	if u := usage.render(); u != nil {
		p.Set(wire.FieldUsage, u)
	}
	return p.Bytes(), nil
}

// reindex rewrites an object's "index" to index*n + sample (index 0 when absent).
func reindex(obj []byte, n, sample int64) (indexed, error) {
	o, err := jsonbody.Parse(obj)
	if err != nil {
		return indexed{}, fmt.Errorf("choice is not an object: %w", err)
	}
	var idx int64
	if raw, ok := o.Get(wire.FieldIndex); ok {
		idx, _ = jsonbody.Int(raw)
	}
	idx = idx*n + sample
	return indexed{idx: idx, raw: o.Edit().SetInt(wire.FieldIndex, idx).Bytes()}, nil
}

func joinArray(items []indexed) []byte {
	size := 2
	for _, it := range items {
		size += len(it.raw) + 1
	}
	out := make([]byte, 0, size)
	out = append(out, '[')
	for i, it := range items {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, it.raw...)
	}
	return append(out, ']')
}

// usageSum accumulates OpenAI usage objects across samples.
type usageSum struct {
	first      *jsonbody.Object
	prompt     int64
	completion int64
}

func (u *usageSum) add(raw []byte) {
	if jsonbody.KindOf(raw) != jsonbody.KindObject {
		return
	}
	o, err := jsonbody.Parse(raw)
	if err != nil {
		return
	}
	if u.first == nil {
		u.first = o
		if v, ok := o.Get(wire.FieldPromptTokens); ok {
			u.prompt, _ = jsonbody.Int(v)
		}
	}
	if v, ok := o.Get(wire.FieldCompletionTokens); ok {
		c, _ := jsonbody.Int(v)
		u.completion += c
	}
}

// render returns the merged usage object, or nil when no sample reported usage.
func (u *usageSum) render() []byte {
	if u.first == nil {
		return nil
	}
	return u.first.Edit().SetInt(wire.FieldCompletionTokens, u.completion).
		SetInt(wire.FieldTotalTokens, u.prompt+u.completion).Bytes()
}

func mergeGenerate(bodies [][]byte) ([]byte, error) {
	n := len(bodies)
	items := make([][][]byte, n)
	batch := -1
	for s, b := range bodies {
		if !jsonbody.Valid(b) {
			return nil, fmt.Errorf("merge samples: response %d is not valid JSON", s)
		}
		switch jsonbody.KindOf(b) {
		case jsonbody.KindObject:
			items[s] = [][]byte{trimSpace(b)}
		case jsonbody.KindArray:
			for _, e := range jsonbody.Elements(b) {
				items[s] = append(items[s], e)
			}
		default:
			return nil, fmt.Errorf("merge samples: response %d is a %s, want an object or array", s, jsonbody.KindOf(b))
		}
		if batch >= 0 && len(items[s]) != batch {
			return nil, fmt.Errorf("merge samples: response %d has %d items, response 0 has %d", s, len(items[s]), batch)
		}
		batch = len(items[s])
	}
	out := []byte{'['}
	k := 0
	for b := range batch {
		for s := range n {
			if k > 0 {
				out = append(out, ',')
			}
			out = append(out, items[s][b]...)
			k++
		}
	}
	return append(out, ']'), nil
}

func trimSpace(b []byte) []byte {
	i, j := 0, len(b)
	for i < j && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	for j > i && (b[j-1] == ' ' || b[j-1] == '\t' || b[j-1] == '\n' || b[j-1] == '\r') {
		j--
	}
	return b[i:j]
}
