package handoff

import (
	"github.com/smg-go/smg/domain/errs"
	"github.com/smg-go/smg/domain/jsonbody"
	"github.com/smg-go/smg/domain/wire"
)

// Plan is one vLLM sequential dispatch (seed "Sequential Dispatch (vLLM)"; smg-spec.md
// §2.10.4): send Prefill (unless SkipPrefill), wait for its 2xx body, then send
// Decode(prefillResponse). A Plan is used by one dispatch; it is not safe for concurrent use.
type Plan struct {
	// Mode is the connector mode, for smg_pd_kv_connector_mode_total (counted once per
	// dispatch, before the prefill is contacted).
	Mode string
	// SkipPrefill is true for n>1 (Decode(nil) gives the decode body and
	// OutcomeSkipPrefill) and when the connector can hand nothing off (OutcomeRecompute):
	// send no prefill leg.
	SkipPrefill bool
	// TransferID is the minted Mooncake transfer id, "" otherwise (for logs).
	TransferID string
	// Prefill is the prefill leg body (nil when SkipPrefill).
	Prefill []byte

	conn Connector
	req  *Request
	// recompute: the connector can hand nothing off (Mooncake without an engine id), so no
	// prefill leg is sent.
	recompute bool
}

// recomputer is a Connector that may know before the prefill leg that the decode will
// recompute the prompt whatever the prefill returns (Mooncake without an engine id).
type recomputer interface{ Recomputes() bool }

// PlanSequential plans the dispatch of req with connector c. For N > 1 the prefill leg is
// skipped (the handoff is single-consumer, seed "Connector Modes"), and so it is when the
// connector can hand nothing off — Mooncake without the prefill's engine id, where the
// decode recomputes the prompt over HTTP (seed "Mooncake without an engine id"): a
// one-token prefill leg would only burn prefill compute. Otherwise the prefill body is
// PrefillBody with c's tag. Errors: the *errs.Error of PrefillBody.
func PlanSequential(c Connector, req *Request) (*Plan, error) {
	p := &Plan{Mode: c.Mode(), conn: c, req: req}
	if req.N > 1 {
		p.SkipPrefill = true
		return p, nil
	}
	if r, ok := c.(recomputer); ok && r.Recomputes() {
		p.SkipPrefill, p.recompute = true, true
		return p, nil
	}
	tag, id := c.PrefillParams()
	body, err := PrefillBody(req, tag)
	if err != nil {
		return nil, err
	}
	p.Prefill, p.TransferID = body, id
	return p, nil
}

// Decode returns the decode leg body for the prefill's 2xx response body (ignored, may be
// nil, when SkipPrefill) and the handoff outcome: the original client body plus the
// connector's kv_transfer_params (DecodeBody).
func (p *Plan) Decode(prefillResponse []byte) (body []byte, outcome Outcome) {
	if p.recompute {
		return DecodeBody(p.req, nil), OutcomeRecompute
	}
	if p.SkipPrefill {
		return DecodeBody(p.req, nil), OutcomeSkipPrefill
	}
	params, outcome := p.conn.DecodeParams(HarvestParams(prefillResponse), p.TransferID)
	return DecodeBody(p.req, params), outcome
}

// PrefillBody is the one-token prefill leg body (seed "Sequential Dispatch (vLLM)" step 1;
// smg-spec.md §2.10.3, §11.2 T-HTTP-10): the client body with
//   - the output capped at one token through the route's own field: chat with
//     "max_completion_tokens" → that field = 1 and "max_tokens" removed (sending both is
//     rejected); /v1/responses → "max_output_tokens" = 1; /generate →
//     "sampling_params.max_new_tokens" = 1 (and "sampling_params.n" = 1 if present);
//     everything else → "max_tokens" = 1;
//   - "stream": false; "n": 1 when present; "min_tokens" and "stream_options" removed;
//   - "kv_transfer_params" = tag, or removed when tag is nil (the gateway owns the field:
//     a client-sent value never reaches an engine).
//
// Key order and other fields are kept. Error: *errs.Error 400 invalid_request when a
// /generate "sampling_params" is not an object.
func PrefillBody(req *Request, tag []byte) ([]byte, error) {
	p := req.Body.Edit()
	defer p.Release()
	p.SetBool(wire.FieldStream, false)
	p.Delete(wire.FieldStreamOptions)
	p.ReplaceInt(wire.FieldN, 1)
	p.Delete(wire.FieldMinTokens)
	switch {
	case req.Route == RouteChat && req.HasMaxCompletionTokens:
		p.SetInt(wire.FieldMaxCompletionTokens, 1)
		p.Delete(wire.FieldMaxTokens)
	case req.Route == RouteResponses:
		p.SetInt(wire.FieldMaxOutputTokens, 1)
	case req.Route == RouteGenerate:
		sp, err := p.Nested(wire.FieldSamplingParams)
		if err != nil {
			return nil, errs.BadRequest("%q must be an object: %v", wire.FieldSamplingParams, err)
		}
		sp.SetInt(wire.FieldMaxNewTokens, 1)
		sp.ReplaceInt(wire.FieldN, 1)
	default:
		p.SetInt(wire.FieldMaxTokens, 1)
	}
	setParams(p, tag)
	return p.Bytes(), nil
}

// DecodeBody is the decode leg body: the original client body (not sanitised) with
// "kv_transfer_params" = params, or without the key when params is nil. When there is
// nothing to change it returns the client's own bytes (req.Body.Bytes()), not a copy.
func DecodeBody(req *Request, params []byte) []byte {
	if params == nil && !req.Body.Has(wire.FieldKVTransferParams) {
		return req.Body.Bytes()
	}
	p := req.Body.Edit()
	defer p.Release()
	setParams(p, params)
	return p.Bytes()
}

func setParams(p *jsonbody.Patch, params []byte) {
	if params == nil {
		p.Delete(wire.FieldKVTransferParams)
		return
	}
	p.Set(wire.FieldKVTransferParams, params)
}

// HarvestParams returns the top-level "kv_transfer_params" of a prefill response body, raw
// and byte-for-byte (engines.md §3.1: vLLM adds it to Completion and ChatCompletion
// responses). It returns nil when the body does not parse as a JSON object, or the field is
// absent, null, not an object, or an empty object: decode could not use any of those, and
// the connector's fallback (and its counter) must apply rather than a silent recompute.
func HarvestParams(prefillResponse []byte) []byte {
	if !jsonbody.Valid(prefillResponse) {
		return nil
	}
	raw, ok := jsonbody.Member(prefillResponse, wire.FieldKVTransferParams)
	if !ok || jsonbody.KindOf(raw) != jsonbody.KindObject || isEmptyObject(raw) {
		return nil
	}
	return raw
}

// isEmptyObject reports whether raw, a validated JSON object, has no members.
func isEmptyObject(raw []byte) bool {
	for _, c := range raw[1:] {
		switch c {
		case ' ', '\t', '\n', '\r':
			continue
		}
		return c == '}'
	}
	return true
}
