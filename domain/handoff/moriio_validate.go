package handoff

import (
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/smg-go/smg/domain/errs"
	"github.com/smg-go/smg/domain/jsonbody"
	"github.com/smg-go/smg/domain/wire"
)

// ValidateMoRIIOHandoff checks the kv_transfer_params a MoRI-IO prefill returned (raw JSON
// object; nil when absent) before they reach a decode engine, whose connector parses them in
// its scheduler step, where a wrong shape raises for every request (seed "MoRI-IO (HTTP)"):
//   - "transfer_id" is the minted transferID;
//   - "remote_engine_id" is a non-empty string;
//   - "remote_block_ids" is a non-empty flat list of non-negative integers, or a non-empty
//     list of such lists (one per KV cache group);
//   - "remote_host" is a non-empty string without whitespace (not compared with any label);
//   - "remote_handshake_port" and "remote_notify_port" are ports 1-65535, as a number or a
//     decimal string; with ports non-nil (concurrent dispatch) they equal ports[0] and
//     ports[1], the handshake and notify ports the decode leg was told;
//   - "remote_dp_size", "remote_dp_size_local", "remote_dp_rank", "tp_size" and
//     "remote_tp_size", when present and not null, are non-negative integers, as a number or
//     a decimal string.
//
// The error is *errs.Error 502 moriio_handoff_invalid on the prefill leg, retryable (a retry
// re-selects both legs), naming the first field that failed.
func ValidateMoRIIOHandoff(params []byte, transferID string, ports *[2]int) error {
	if params == nil {
		return handoffInvalid("the prefill returned no kv_transfer_params")
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(params, &m); err != nil {
		return handoffInvalid("kv_transfer_params is not an object")
	}
	if id, ok := jsonString(m[wire.KVTransferID]); !ok || id != transferID {
		return handoffInvalid(fmt.Sprintf("%s is %s, not the minted %q", wire.KVTransferID, shown(m[wire.KVTransferID]), transferID))
	}
	if id, ok := jsonString(m[wire.KVRemoteEngineID]); !ok || id == "" {
		return handoffInvalid(wire.KVRemoteEngineID + " must be a non-empty string, got " + shown(m[wire.KVRemoteEngineID]))
	}
	if !blockIDs(m[wire.KVRemoteBlockIDs]) {
		return handoffInvalid(wire.KVRemoteBlockIDs + " must be a list of integer block ids or one list per KV cache group, got " + shown(m[wire.KVRemoteBlockIDs]))
	}
	if h, ok := jsonString(m[wire.KVRemoteHost]); !ok || !validHost(h) {
		return handoffInvalid(wire.KVRemoteHost + " must be a non-empty string without whitespace, got " + shown(m[wire.KVRemoteHost]))
	}
	for i, key := range []string{wire.KVRemoteHandshakePort, wire.KVRemoteNotifyPort} {
		n, ok := intValue(m[key])
		if !ok || n < 1 || n > 65535 {
			return handoffInvalid(key + " must be a port (1-65535) as a number or a string, got " + shown(m[key]))
		}
		if ports != nil && int(n) != ports[i] {
			return handoffInvalid(fmt.Sprintf("%s is %d, but the decode leg was told %d (the prefill worker's labels)", key, n, ports[i]))
		}
	}
	for _, key := range []string{wire.KVRemoteDPSize, wire.KVRemoteDPSizeLocal, wire.KVRemoteDPRank, wire.KVTPSize, wire.KVRemoteTPSize} {
		raw, ok := m[key]
		if !ok || jsonbody.IsNull(raw) {
			continue
		}
		if n, ok := intValue(raw); !ok || n < 0 {
			return handoffInvalid(key + " must be an integer count as a number or a decimal string, got " + shown(raw))
		}
	}
	return nil
}

func handoffInvalid(why string) *errs.Error {
	return &errs.Error{Status: 502, Code: wire.CodeMoRIIOHandoffInvalid, Leg: "prefill", Retryable: true,
		Message: "The prefill returned no usable MoRI-IO handoff: " + why}
}

// shown renders a raw value for a message: "absent" or the JSON, cut at 64 bytes.
func shown(raw json.RawMessage) string {
	if raw == nil {
		return "absent"
	}
	if len(raw) > 64 {
		return string(raw[:64]) + "..."
	}
	return string(raw)
}

func jsonString(raw json.RawMessage) (string, bool) {
	if jsonbody.KindOf(raw) != jsonbody.KindString {
		return "", false
	}
	var s string
	return s, json.Unmarshal(raw, &s) == nil
}

// intLiteral parses a JSON integer literal (no fraction or exponent).
func intLiteral(raw []byte) (int64, bool) {
	if jsonbody.KindOf(raw) != jsonbody.KindNumber {
		return 0, false
	}
	n, err := strconv.ParseInt(string(raw), 10, 64)
	return n, err == nil
}

// intValue parses an integer written as a JSON integer literal or a string of decimal
// digits.
func intValue(raw []byte) (int64, bool) {
	if n, ok := intLiteral(raw); ok {
		return n, true
	}
	s, ok := jsonString(raw)
	if !ok || s == "" {
		return 0, false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	return n, err == nil
}

// blockIDs reports whether raw is a non-empty list of non-negative integers or a non-empty
// list of such lists.
func blockIDs(raw []byte) bool {
	if jsonbody.KindOf(raw) != jsonbody.KindArray {
		return false
	}
	n, nested := 0, jsonbody.IsArrayOfArrays(raw)
	for _, e := range jsonbody.Elements(raw) {
		n++
		if nested {
			if !flatIDs(e) {
				return false
			}
		} else if v, ok := intLiteral(e); !ok || v < 0 {
			return false
		}
	}
	return n > 0
}

func flatIDs(raw []byte) bool {
	if jsonbody.KindOf(raw) != jsonbody.KindArray {
		return false
	}
	n := 0
	for _, e := range jsonbody.Elements(raw) {
		n++
		if v, ok := intLiteral(e); !ok || v < 0 {
			return false
		}
	}
	return n > 0
}
