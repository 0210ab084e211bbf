package handoff

import (
	"github.com/smg-go/smg/domain/jsonbody"
	"github.com/smg-go/smg/domain/wire"
)

// BytesPerToken is the stand-in tokenizer's ratio used by LoadPromptTokens: about four
// bytes of English text (or JSON around it) per BPE token, the usual rule of thumb for
// GPT-style vocabularies. It only sizes a request for load counting; it never reaches an
// engine.
const BytesPerToken = 4

// DefaultDecodeTokens is the expected decode length (tokens per sample) DecodeTokens counts
// for a request that sets no output cap: vLLM's and SGLang's own default caps are the
// model's whole context, which would make every uncapped request look enormous.
const DefaultDecodeTokens = 256

// LoadPromptTokens is the prompt size of r for the gateway's token load, and whether it was
// counted rather than estimated: a body of token ids (PromptTokens, times the prompts of a
// batch) is counted; any other body is estimated as its length in bytes ÷ BytesPerToken (the
// whole JSON body, so a batch counts all its prompts), at least 1. 0 for a nil request.
func (r *Request) LoadPromptTokens() (n int, counted bool) {
	if r == nil || r.Body == nil {
		return 0, false
	}
	if ids := r.PromptTokens(); ids > 0 {
		return ids * max(r.Batch, 1), true
	}
	return max(len(r.Body.Bytes())/BytesPerToken, 1), false
}

// DecodeTokens is the number of tokens r is expected to generate, for the gateway's token
// load: its output cap — "max_tokens" or "max_completion_tokens" (chat, completions,
// messages), "max_output_tokens" (responses), "sampling_params.max_new_tokens" (/generate)
// — when set to a positive integer, else def; times the samples per prompt (N) and the
// prompts of a batch.
func (r *Request) DecodeTokens(def int) int {
	if r == nil || r.Body == nil {
		return 0
	}
	limit := r.MaxOutputTokens()
	if limit == 0 {
		limit = def
	}
	return limit * max(r.N, 1) * max(r.Batch, 1)
}

// MaxOutputTokens is the client's cap on output tokens per sample: sampling_params
// max_new_tokens (/generate), max_output_tokens (/v1/responses), else
// max_completion_tokens or max_tokens; 0 when the body sets none (or not a positive
// integer).
func (r *Request) MaxOutputTokens() int {
	if r == nil || r.Body == nil {
		return 0
	}
	o := r.Body
	switch r.Route {
	case RouteGenerate:
		if sp, ok := o.Get(wire.FieldSamplingParams); ok {
			return positiveInt(jsonbody.Member(sp, wire.FieldMaxNewTokens))
		}
		return 0
	case RouteResponses:
		return positiveInt(o.Get(wire.FieldMaxOutputTokens))
	}
	if limit := positiveInt(o.Get(wire.FieldMaxCompletionTokens)); limit > 0 {
		return limit
	}
	return positiveInt(o.Get(wire.FieldMaxTokens))
}

// positiveInt is raw's integer value when it is one above 0, else 0.
func positiveInt(raw []byte, ok bool) int {
	if !ok {
		return 0
	}
	v, isInt := jsonbody.Int(raw)
	if !isInt || v <= 0 {
		return 0
	}
	return int(min(v, 1<<30))
}
