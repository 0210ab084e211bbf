package handoff

import (
	"strconv"

	"github.com/smg-go/smg/domain/jsonbody"
	"github.com/smg-go/smg/domain/wire"
)

// MoRIIOPlan is one MoRI-IO dispatch over HTTP (seed "Connector Modes" MoRIIOConnector row,
// "MoRI-IO (HTTP)"): the prefill leg body, and under concurrent WRITE dispatch the decode leg
// body minted up front. Sequential dispatch builds the decode body from the prefill's checked
// handoff (CheckHandoff, then DecodeBody). Used by one dispatch; not safe for concurrent use.
type MoRIIOPlan struct {
	Pair *MoRIIOPair
	// TransferID is the minted transfer id, "xfer-<uuid>".
	TransferID string
	// Prefill is the one-token prefill leg body.
	Prefill []byte
	// Decode is the concurrent decode leg body (minted params); nil under sequential dispatch.
	Decode []byte

	req *Request
}

// PlanMoRIIO plans req on a checked pair, minting the transfer id with newUUID. The prefill
// leg is PrefillBody with the tag {"do_remote_decode":true,"do_remote_prefill":false,
// "transfer_id":<id>,"remote_dp_size":1} plus "remote_tp_size" (the decode's tp_size label,
// when set) and, in WRITE mode, the decode's side channel ("remote_host",
// "remote_handshake_port", "remote_notify_port"), and with "ignore_eos": true and no "stop"
// or "stop_token_ids": the connector returns a handoff only when the leg ends at its
// one-token cap. Errors: the *errs.Error of PrefillBody.
func PlanMoRIIO(pair *MoRIIOPair, req *Request, newUUID func() string) (*MoRIIOPlan, error) {
	p := &MoRIIOPlan{Pair: pair, TransferID: wire.TransferIDPrefix + newUUID(), req: req}
	tag := appendTagStart(nil, true, p.TransferID)
	tag = appendCount(tag, wire.KVRemoteDPSize, 1)
	if pair.Decode.TPSize > 0 {
		tag = appendCount(tag, wire.KVRemoteTPSize, pair.Decode.TPSize)
	}
	if pair.Write() {
		tag = appendSideChannel(tag, pair.Decode)
	}
	tag = append(tag, '}')
	body, err := PrefillBody(req, tag)
	if err != nil {
		return nil, err
	}
	o, err := jsonbody.Parse(body)
	if err != nil {
		return nil, err
	}
	e := o.Edit()
	e.SetBool(wire.FieldIgnoreEOS, true)
	e.Delete(wire.FieldStop)
	e.Delete(wire.FieldStopTokenIDs)
	p.Prefill = e.Bytes()
	if pair.Concurrent {
		params := appendTagStart(nil, false, p.TransferID)
		params = appendCount(params, wire.KVRemoteDPSize, 1)
		params = appendSideChannel(params, pair.Prefill)
		if pair.Prefill.TPSize > 0 {
			params = appendCount(params, wire.KVRemoteTPSize, pair.Prefill.TPSize)
		}
		p.Decode = DecodeBody(req, append(params, '}'))
	}
	return p, nil
}

// DecodeBody is the sequential decode leg body: the client's body (its stop conditions
// kept) with the checked handoff params, verbatim.
func (p *MoRIIOPlan) DecodeBody(params []byte) []byte { return DecodeBody(p.req, params) }

// CheckHandoff returns the prefill response's kv_transfer_params once they pass
// ValidateMoRIIOHandoff for the minted transfer id (under concurrent dispatch also the
// prefill side channel's ports the decode leg was told), else the *errs.Error 502
// moriio_handoff_invalid.
func (p *MoRIIOPlan) CheckHandoff(prefillResponse []byte) ([]byte, error) {
	var ports *[2]int
	if p.Pair.Concurrent {
		ports = &[2]int{p.Pair.Prefill.HandshakePort, p.Pair.Prefill.NotifyPort}
	}
	params := HarvestParams(prefillResponse)
	if err := ValidateMoRIIOHandoff(params, p.TransferID, ports); err != nil {
		return nil, err
	}
	return params, nil
}

func appendTagStart(b []byte, prefill bool, transferID string) []byte {
	if prefill {
		b = append(b, `{"`+wire.KVDoRemoteDecode+`":true,"`+wire.KVDoRemotePrefill+`":false,"`+wire.KVTransferID+`":`...)
	} else {
		b = append(b, `{"`+wire.KVDoRemoteDecode+`":false,"`+wire.KVDoRemotePrefill+`":true,"`+wire.KVTransferID+`":`...)
	}
	return jsonbody.AppendString(b, transferID)
}

func appendCount(b []byte, key string, n int) []byte {
	b = append(b, `,"`+key+`":`...)
	return strconv.AppendInt(b, int64(n), 10)
}

func appendSideChannel(b []byte, s MoRIIOSide) []byte {
	b = append(b, `,"`+wire.KVRemoteHost+`":`...)
	b = jsonbody.AppendString(b, s.Host)
	b = appendCount(b, wire.KVRemoteHandshakePort, s.HandshakePort)
	return appendCount(b, wire.KVRemoteNotifyPort, s.NotifyPort)
}
