package handoff

import (
	"strconv"

	"github.com/smg-go/smg/domain/jsonbody"
	"github.com/smg-go/smg/domain/wire"
)

// Mooncake is the MooncakeConnector strategy (seed "Connector Modes"; smg-spec.md §2.10.2,
// §2.10.4, §11.4). Mooncake pushes the KV and returns nothing, so SMG mints both sides:
// the prefill tag {"do_remote_decode":true,"do_remote_prefill":false,"transfer_id":<id>}
// and the decode params
// {"do_remote_decode":false,"do_remote_prefill":true,"transfer_id":<id>,
// "remote_engine_id":<EngineID>,"remote_bootstrap_addr":"http://<Host>:<Port>"}
// (exactly these five keys, in this order). Without an engine id nothing can be minted: no
// prefill tag, OutcomeRecompute. Whatever the prefill returns is ignored.
type Mooncake struct {
	// Host is the prefill's bootstrap host (IPv6 in brackets).
	Host string
	// Port is the prefill's bootstrap port; 8998 when the worker registered none.
	Port int
	// EngineID is the prefill's effective KV engine id (EffectiveEngineID), "" if unknown.
	EngineID string
	// NewUUID returns a fresh UUIDv7 in text form; transfer ids are "xfer-" + NewUUID().
	NewUUID func() string
}

// Mode returns "mooncake".
func (*Mooncake) Mode() string { return wire.ModeMooncake }

// Recomputes reports that nothing can be minted (no engine id): the decode recomputes the
// prompt, so the sequential plan sends no prefill leg.
func (m *Mooncake) Recomputes() bool { return m.EngineID == "" || m.NewUUID == nil }

// PrefillParams mints a transfer id and returns the three-key tag, or (nil, "") without an
// engine id.
func (m *Mooncake) PrefillParams() ([]byte, string) {
	if m.EngineID == "" || m.NewUUID == nil {
		return nil, ""
	}
	id := wire.TransferIDPrefix + m.NewUUID()
	tag := make([]byte, 0, 80+len(id))
	tag = append(tag, `{"`+wire.KVDoRemoteDecode+`":true,"`+wire.KVDoRemotePrefill+`":false,"`+wire.KVTransferID+`":`...)
	tag = jsonbody.AppendString(tag, id)
	return append(tag, '}'), id
}

// DecodeParams returns the five-key minted params (OutcomeMinted), or OutcomeRecompute
// without an engine id or transfer id. prefillParams is ignored.
func (m *Mooncake) DecodeParams(_ []byte, transferID string) ([]byte, Outcome) {
	if m.EngineID == "" || transferID == "" {
		return nil, OutcomeRecompute
	}
	p := make([]byte, 0, 160+len(transferID)+len(m.EngineID)+len(m.Host))
	p = append(p, `{"`+wire.KVDoRemoteDecode+`":false,"`+wire.KVDoRemotePrefill+`":true,"`+wire.KVTransferID+`":`...)
	p = jsonbody.AppendString(p, transferID)
	p = append(p, `,"`+wire.KVRemoteEngineID+`":`...)
	p = jsonbody.AppendString(p, m.EngineID)
	p = append(p, `,"`+wire.KVRemoteBootstrapAddr+`":`...)
	p = jsonbody.AppendString(p, "http://"+m.Host+":"+strconv.Itoa(m.Port))
	return append(p, '}'), OutcomeMinted
}

var _ Connector = (*Mooncake)(nil)
