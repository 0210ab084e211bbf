package handoff

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/smg-go/smg/domain/wire"
	"github.com/smg-go/smg/domain/worker"
)

// Outcome is how a vLLM dispatch's KV handoff ended. Every value other than OutcomeRelayed
// and OutcomeMinted means decode recomputes the prompt; the dispatcher logs it and counts
// the ones the seed names (issue #5 item 4: "every one must be counted").
type Outcome uint8

// The outcomes.
const (
	// OutcomeRelayed: decode carries the params the prefill returned, verbatim (nixl,
	// passthrough).
	OutcomeRelayed Outcome = iota + 1
	// OutcomeMinted: decode carries the Mooncake params SMG minted.
	OutcomeMinted
	// OutcomeNoParams: passthrough and the prefill returned none; decode recomputes
	// (already visible as smg_pd_kv_connector_mode_total{mode="passthrough"}).
	OutcomeNoParams
	// OutcomeKVTransferFailure: a NIXL prefill returned no params; increment
	// smg_pd_kv_transfer_failures_total (seed "Connector Modes" fallbacks).
	OutcomeKVTransferFailure
	// OutcomeRecompute: a Mooncake prefill without a KV engine id; nothing can be minted.
	OutcomeRecompute
	// OutcomeSkipPrefill: n>1, the handoff is single-consumer; no prefill leg was sent.
	OutcomeSkipPrefill
)

// String is the outcome's log name: relayed, minted, no_params, kv_transfer_failure,
// recompute or skip_prefill.
func (o Outcome) String() string {
	switch o {
	case OutcomeRelayed:
		return "relayed"
	case OutcomeMinted:
		return "minted"
	case OutcomeNoParams:
		return "no_params"
	case OutcomeKVTransferFailure:
		return "kv_transfer_failure"
	case OutcomeRecompute:
		return "recompute"
	case OutcomeSkipPrefill:
		return "skip_prefill"
	}
	return "unknown"
}

// HandedOff reports whether the decode leg carries kv_transfer_params (no recompute).
func (o Outcome) HandedOff() bool { return o == OutcomeRelayed || o == OutcomeMinted }

// CountsKVTransferFailure reports whether the outcome increments
// smg_pd_kv_transfer_failures_total.
func (o Outcome) CountsKVTransferFailure() bool { return o == OutcomeKVTransferFailure }

// Connector is one vLLM KV connector's handoff strategy (seed "Connector Modes"). One file
// per connector: nixl.go, mooncake.go, passthrough.go. Implementations are stateless per
// dispatch (the minted transfer id travels through the caller) and safe for concurrent use.
// Returned byte slices are read-only (the NIXL tag is shared; relayed params alias the
// prefill response).
type Connector interface {
	// Mode is the smg_pd_kv_connector_mode_total label: "nixl", "mooncake" or "passthrough".
	Mode() string
	// PrefillParams returns the kv_transfer_params tag for the prefill leg (nil: no tag)
	// and the transfer id minted for this dispatch ("" when none). Called once per
	// dispatch, so a minting connector mints a fresh id each call.
	PrefillParams() (tag []byte, transferID string)
	// DecodeParams returns the decode leg's kv_transfer_params (nil: none) and the
	// outcome, given the params the prefill returned (HarvestParams: nil when absent, null,
	// empty or not an object) and the transferID PrefillParams returned.
	DecodeParams(prefillParams []byte, transferID string) (params []byte, outcome Outcome)
}

// ConnectorFor returns the Connector of a vLLM prefill worker from its kv_connector
// (the registered field, else the "kv_connector" label; exact names, smg-spec.md §2.10.1):
// NixlConnector → nixl; MooncakeConnector → mooncake with the worker's bootstrap host,
// bootstrap port (8998 when none) and effective KV engine id; anything else or none →
// passthrough. newUUID mints the UUIDv7 text behind Mooncake transfer ids ("xfer-<uuid>").
//
// Errors: a MoRIIOConnector worker is ErrMoRIIOPath (a MoRI-IO pair takes CheckMoRIIOPair
// and PlanMoRIIO instead: its decode engine never recomputes, so no Connector fallback may
// apply). A Mooncake worker with an engine id but a nil newUUID is a programming error,
// reported as a plain error.
func ConnectorFor(w worker.Worker, newUUID func() string) (Connector, error) {
	switch connectorName(w) {
	case wire.ConnectorNixl:
		return Nixl{}, nil
	case wire.ConnectorMooncake:
		m := &Mooncake{Host: w.BootstrapHost(), Port: wire.DefaultBootstrapPort, NewUUID: newUUID}
		if p, ok := bootstrapPort(w); ok {
			m.Port = p
		}
		m.EngineID, _ = EffectiveEngineID(w)
		if m.EngineID != "" && newUUID == nil {
			return nil, fmt.Errorf("handoff: mooncake connector for %s needs a transfer id generator", w.URL)
		}
		return m, nil
	case wire.ConnectorMoRIIO:
		return nil, ErrMoRIIOPath
	}
	return Passthrough{}, nil
}

// ConnectorForPair is ConnectorFor on the prefill worker that also returns ErrMoRIIOPath
// when the decode worker is a MoRIIOConnector worker (the seed takes the MoRI-IO path
// whenever the decode is one).
func ConnectorForPair(prefill, decode worker.Worker, newUUID func() string) (Connector, error) {
	if IsMoRIIO(decode) {
		return nil, ErrMoRIIOPath
	}
	return ConnectorFor(prefill, newUUID)
}

// ErrMoRIIOPath is returned by ConnectorFor and ConnectorForPair for a MoRI-IO leg: such a
// pair must be dispatched through CheckMoRIIOPair and PlanMoRIIO.
var ErrMoRIIOPath = errors.New("handoff: a MoRIIOConnector pair takes the MoRI-IO path, not a Connector")

func connectorName(w worker.Worker) string {
	if w.KVConnector != "" {
		return w.KVConnector
	}
	return w.Labels[wire.LabelKVConnector]
}

func bootstrapPort(w worker.Worker) (int, bool) {
	if w.BootstrapPort != nil {
		return *w.BootstrapPort, true
	}
	if s, ok := w.Labels[wire.LabelBootstrapPort]; ok {
		if p, err := strconv.Atoi(s); err == nil && p > 0 && p < 65536 {
			return p, true
		}
	}
	return 0, false
}

// EffectiveEngineID is the KV engine id Mooncake params name (smg-spec.md §2.10.1,
// §11.3): the worker's kv_engine_id (field, else label); with a DP size > 1 (the worker's
// --dp-aware DPSize, else the "dp_size" label) it is "<id>_dp<rank>" and needs the worker's
// DP rank. ok is false — fail closed, decode recomputes — when the id is empty, the DP rank
// is unknown, or the dp_size label is not a positive integer.
func EffectiveEngineID(w worker.Worker) (id string, ok bool) {
	base := w.KVEngineID
	if base == "" {
		base = w.Labels[wire.LabelKVEngineID]
	}
	if base == "" {
		return "", false
	}
	dpSize := 1
	if w.DPSize != nil {
		dpSize = *w.DPSize
	} else if s, ok := w.Labels[wire.LabelDPSize]; ok {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			return "", false
		}
		dpSize = n
	}
	if dpSize > 1 {
		if w.DPRank == nil {
			return "", false
		}
		return base + "_dp" + strconv.Itoa(*w.DPRank), true
	}
	return base, true
}
