package handoff

import "github.com/smg-go/smg/domain/wire"

// Passthrough is the strategy for a prefill worker with no or another KV connector (seed
// "Connector Modes": "None or another connector"): no prefill tag; the decode leg carries
// whatever kv_transfer_params the prefill returned, verbatim, else nothing
// (OutcomeNoParams: decode recomputes, visible through the passthrough mode counter).
type Passthrough struct{}

// Mode returns "passthrough".
func (Passthrough) Mode() string { return wire.ModePassthrough }

// PrefillParams returns no tag and no transfer id.
func (Passthrough) PrefillParams() ([]byte, string) { return nil, "" }

// DecodeParams relays prefillParams when present (OutcomeRelayed), else OutcomeNoParams.
func (Passthrough) DecodeParams(prefillParams []byte, _ string) ([]byte, Outcome) {
	if prefillParams == nil {
		return nil, OutcomeNoParams
	}
	return prefillParams, OutcomeRelayed
}

var _ Connector = Passthrough{}
