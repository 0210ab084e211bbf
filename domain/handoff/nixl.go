package handoff

import "github.com/smg-go/smg/domain/wire"

// nixlTag is the NIXL prefill tag (seed "Connector Modes"; engines.md §3.1).
var nixlTag = []byte(`{"` + wire.KVDoRemoteDecode + `":true,"` + wire.KVDoRemotePrefill + `":false}`)

// Nixl is the NixlConnector strategy: tag the prefill leg
// {"do_remote_decode":true,"do_remote_prefill":false} and relay whatever kv_transfer_params
// the prefill returns, verbatim and opaque (string or integer block ids, nested lists, extra
// keys). A prefill that returns none is OutcomeKVTransferFailure: decode recomputes and the
// failure is counted (usual causes: an outdated engine, a worker without
// --kv-transfer-config).
type Nixl struct{}

// Mode returns "nixl".
func (Nixl) Mode() string { return wire.ModeNixl }

// PrefillParams returns the fixed NIXL tag and no transfer id.
func (Nixl) PrefillParams() ([]byte, string) { return nixlTag, "" }

// DecodeParams relays prefillParams (OutcomeRelayed), or returns OutcomeKVTransferFailure
// when there are none.
func (Nixl) DecodeParams(prefillParams []byte, _ string) ([]byte, Outcome) {
	if prefillParams == nil {
		return nil, OutcomeKVTransferFailure
	}
	return prefillParams, OutcomeRelayed
}

var _ Connector = Nixl{}
