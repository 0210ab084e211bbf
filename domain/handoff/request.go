package handoff

import (
	"errors"
	"fmt"

	"github.com/smg-go/smg/domain/errs"
	"github.com/smg-go/smg/domain/jsonbody"
	"github.com/smg-go/smg/domain/wire"
)

// Request is a client body inspected once for everything the dispatch needs. Body is the
// parsed original; nothing here modifies it. Fields not meaningful for a route hold their
// zero value (N is 1).
type Request struct {
	// Route is the API the body was sent to.
	Route Route
	// Body is the validated client body, key order and unknown fields intact.
	Body *jsonbody.Object
	// Stream is the body's "stream" (false when absent or null).
	Stream bool
	// Logprobs reports whether prompt logprobs must be merged (smg-spec.md §2.1):
	// /generate "return_logprob" true (or any true in a list); chat "logprobs" true;
	// completions "logprobs" present and not null/false. Always false on other routes.
	Logprobs bool
	// Batch is the number of prompts when the body carries the list form, else 0 (one
	// prompt). /generate: "input_ids" as a non-empty list of lists, else "text" as a
	// non-empty list; completions: "prompt" as a non-empty array that is not a flat list
	// of token ids (a list of token-id lists is a batch). A batch of one is 1, not 0: the
	// bootstrap fields then are one-element lists.
	Batch int
	// N is the number of samples per prompt: top-level "n" (chat, completions) or
	// "sampling_params.n" (/generate); 1 when absent or null, and on other routes. An SGLang
	// dispatch with N > 1 must fan out through SplitSamples (one rendezvous per sample); a
	// vLLM dispatch with N > 1 skips the prefill leg (PlanSequential does).
	N int
	// Model is the body's "model" string, "" when absent or not a string.
	Model string
	// HasMaxCompletionTokens reports whether a chat body set "max_completion_tokens"
	// (non-null); the vLLM prefill leg then caps that field instead of "max_tokens".
	HasMaxCompletionTokens bool
	// RequestID is the body's "request_id" string (vLLM), "" when absent.
	RequestID string
}

// Inspect parses body and reads the request shape for route. Errors are *errs.Error, 400:
// json_parse_error for malformed JSON, invalid_request for a body that is not an object, a
// non-boolean "stream", or an "n" that is not an integer >= 1. Inspect does not extract the
// routing text; call RoutingText when a policy needs it.
func Inspect(route Route, body []byte) (*Request, error) {
	o, err := jsonbody.Parse(body)
	if err != nil {
		if errors.Is(err, jsonbody.ErrNotObject) {
			return nil, errs.BadRequest("request body must be a JSON object: %v", err)
		}
		return nil, errs.New(400, wire.CodeJSONParseError, "failed to parse request body: %v", err)
	}
	r := &Request{Route: route, Body: o, N: 1}
	if raw, ok := o.Get(wire.FieldStream); ok && !jsonbody.IsNull(raw) {
		v, ok := jsonbody.Bool(raw)
		if !ok {
			return nil, errs.BadRequest("%q must be a boolean, got %s", wire.FieldStream, jsonbody.KindOf(raw))
		}
		r.Stream = v
	}
	if raw, ok := o.Get(wire.FieldModel); ok && !jsonbody.IsNull(raw) {
		m, ok := jsonbody.String(raw)
		if !ok {
			return nil, errs.BadRequest("%q must be a string, got %s", wire.FieldModel, jsonbody.KindOf(raw))
		}
		r.Model = m
	}
	if raw, ok := o.Get(wire.FieldRequestID); ok {
		r.RequestID, _ = jsonbody.String(raw)
	}
	switch route {
	case RouteGenerate:
		r.Logprobs = anyTrue(o, wire.FieldReturnLogprob)
		if raw, ok := o.Get(wire.FieldInputIDs); ok && jsonbody.IsArrayOfArrays(raw) {
			r.Batch, _ = jsonbody.ArrayLen(raw)
		} else if raw, ok := o.Get(wire.FieldText); ok && jsonbody.KindOf(raw) == jsonbody.KindArray {
			r.Batch, _ = jsonbody.ArrayLen(raw)
		}
		if sp, ok := o.Get(wire.FieldSamplingParams); ok && jsonbody.KindOf(sp) == jsonbody.KindObject {
			inner, err := jsonbody.Parse(sp)
			if err == nil {
				if r.N, err = readN(inner, wire.FieldSamplingParams+"."+wire.FieldN); err != nil {
					return nil, err
				}
			}
		}
	case RouteChat, RouteCompletions:
		if r.N, err = readN(o, wire.FieldN); err != nil {
			return nil, err
		}
		raw, ok := o.Get(wire.FieldLogprobs)
		if route == RouteChat {
			r.Logprobs, _ = jsonbody.Bool(raw)
			mct, ok := o.Get(wire.FieldMaxCompletionTokens)
			r.HasMaxCompletionTokens = ok && !jsonbody.IsNull(mct)
		} else {
			b, isBool := jsonbody.Bool(raw)
			r.Logprobs = ok && !jsonbody.IsNull(raw) && (!isBool || b)
			if p, ok := o.Get(wire.FieldPrompt); ok {
				r.Batch = promptBatch(p)
			}
		}
	}
	return r, nil
}

// anyTrue reports whether key is true, or a list containing true.
func anyTrue(o *jsonbody.Object, key string) bool {
	raw, ok := o.Get(key)
	if !ok {
		return false
	}
	if v, ok := jsonbody.Bool(raw); ok {
		return v
	}
	for _, e := range jsonbody.Elements(raw) {
		if v, _ := jsonbody.Bool(e); v {
			return true
		}
	}
	return false
}

func readN(o *jsonbody.Object, name string) (int, error) {
	raw, ok := o.Get(wire.FieldN)
	if !ok || jsonbody.IsNull(raw) {
		return 1, nil
	}
	n, ok := jsonbody.Int(raw)
	if !ok || n < 1 || n > 1<<31-1 {
		return 0, errs.BadRequest("%q must be an integer >= 1, got %s", name, raw)
	}
	return int(n), nil
}

// promptBatch is the batch size of a completions "prompt": 0 for a string or a flat list
// of token ids, else the array length.
func promptBatch(p []byte) int {
	if jsonbody.KindOf(p) != jsonbody.KindArray {
		return 0
	}
	n, tokens := 0, true
	for _, e := range jsonbody.Elements(p) {
		if jsonbody.KindOf(e) != jsonbody.KindNumber {
			tokens = false
		}
		n++
	}
	if tokens {
		return 0
	}
	return n
}

// PromptTokens is the prompt length in tokens when the body carries token ids: /generate
// "input_ids" (the first list of a batch) or a completions "prompt" of token ids (the first
// list of a batch); 0 otherwise. Policies use it as policy.Request.Tokens.
func (r *Request) PromptTokens() int {
	var raw []byte
	switch r.Route {
	case RouteGenerate:
		raw, _ = r.Body.Get(wire.FieldInputIDs)
	case RouteCompletions:
		raw, _ = r.Body.Get(wire.FieldPrompt)
	default:
		return 0
	}
	if jsonbody.IsArrayOfArrays(raw) {
		for _, first := range jsonbody.Elements(raw) {
			raw = first
			break
		}
	}
	n := 0
	for _, e := range jsonbody.Elements(raw) {
		if jsonbody.KindOf(e) != jsonbody.KindNumber {
			return 0
		}
		n++
	}
	return n
}

// String summarizes the request for debug logs.
func (r *Request) String() string {
	return fmt.Sprintf("%s model=%q stream=%t logprobs=%t batch=%d n=%d", r.Route, r.Model, r.Stream, r.Logprobs, r.Batch, r.N)
}
