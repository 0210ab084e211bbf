package pdmode

import (
	"github.com/smg-go/smg/domain/jsonbody"
	"github.com/smg-go/smg/domain/wire"
)

// handoffFields are the members a PD leg carries for its KV handoff: SGLang's bootstrap
// data and vLLM's kv_transfer_params. A decode-only request carries none of them: without
// kv_transfer_params a vLLM decode prefills locally (kv-routing.md §6.5).
var handoffFields = []string{wire.FieldBootstrapHost, wire.FieldBootstrapPort, wire.FieldBootstrapRoom, wire.FieldKVTransferParams}

// LocalBody is the body a decode-only request is sent with: the client's body without the
// handoff members (a client-supplied bootstrap room or kv_transfer_params would send the
// engine looking for a prefill that never ran), byte for byte otherwise. Without such
// members it returns body.Bytes() itself (no copy).
func LocalBody(body *jsonbody.Object) []byte {
	var p *jsonbody.Patch
	for _, k := range handoffFields {
		if body.Has(k) {
			if p == nil {
				p = body.Edit()
			}
			p.Delete(k)
		}
	}
	if p == nil {
		return body.Bytes()
	}
	defer p.Release()
	return p.Bytes()
}
