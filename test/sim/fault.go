package sim

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Fault kinds (issue #2 "Fault injection"). Per instance they are given as
// "<kind>[:<arg>]" (Config.Faults, --fault); per request as "<role>:<kind>[:<arg>]" in the
// body field sim_fault (a string or a list of strings), role being "prefill", "decode" or
// "any". Faults apply to inference routes only (not /health, /sim/*, info routes).
const (
	// FaultStatus "status:<code>" answers at once with HTTP <code> (400–599) and the engine's
	// error body; no handoff takes place. Counts in errors.
	FaultStatus = "status"
	// FaultReset closes the connection without answering.
	FaultReset = "reset"
	// FaultHang answers nothing until the client goes away (counted in aborted) or
	// Config.HangMax passes, then closes the connection.
	FaultHang = "hang"
	// FaultDieAfter "die-after:<k>" sends the response head and k output tokens (k SSE
	// chunks when streaming; a truncated JSON body otherwise), then cuts the connection.
	FaultDieAfter = "die-after"
	// FaultMalformed answers 200 with an invalid JSON body (an invalid SSE data line when
	// streaming), without a handoff.
	FaultMalformed = "malformed"
	// FaultSlowFirstByte "slow-first-byte:<ms>" waits <ms> milliseconds before doing
	// anything (the handoff included) and before sending the head.
	FaultSlowFirstByte = "slow-first-byte"
	// FaultDelayBody "delay-body:<ms>" sends the head (status 200) at once, then the body
	// <ms> milliseconds after it is ready. An error found later is sent with that 200 head
	// (as an SSE error event when streaming).
	FaultDelayBody = "delay-body"
	// FaultNoKVParams makes a vLLM prefill return no kv_transfer_params (and keep no KV),
	// and a vLLM decode drop the kv_transfer_params it is given: it fetches nothing,
	// recomputes the prompt (counted in recomputed_prompts) and reports no cached tokens.
	FaultNoKVParams = "no-kv-params"
	// FaultKVLost makes a vLLM NIXL prefill answer with its kv_transfer_params and free the
	// blocks at once, as an engine that died or restarted after answering: the decode's
	// pull finds nothing (404) and the decode fails the request with 500
	// (kv_load_failure_policy=fail).
	FaultKVLost = "kv-lost"
	// FaultHandoffMissingField makes a MoRI-IO prefill return its handoff without
	// remote_block_ids (the KV is still kept or pushed).
	FaultHandoffMissingField = "handoff-missing-field"
	// FaultHandoffWrongTransferID makes a MoRI-IO prefill hand off under a transfer_id other
	// than the one it was given (a foreign handoff: READ keeps, WRITE pushes, under that id).
	FaultHandoffWrongTransferID = "handoff-wrong-transfer-id"
	// FaultHandoffWrongPorts makes a MoRI-IO prefill report remote_handshake_port and
	// remote_notify_port one above its real ports (the KV is still kept or pushed).
	FaultHandoffWrongPorts = "handoff-wrong-ports"
)

// Fault is one parsed fault.
type Fault struct {
	Kind string
	// Arg is the status code (status), token count (die-after) or milliseconds
	// (slow-first-byte, delay-body); 0 for kinds without an argument.
	Arg int
}

// ParseFault parses "<kind>[:<arg>]" (no role prefix). It returns an error naming the bad
// kind or argument.
func ParseFault(s string) (Fault, error) {
	kind, arg, hasArg := strings.Cut(s, ":")
	f := Fault{Kind: kind}
	needArg := false
	switch kind {
	case FaultStatus, FaultDieAfter, FaultSlowFirstByte, FaultDelayBody:
		needArg = true
	case FaultReset, FaultHang, FaultMalformed, FaultNoKVParams, FaultKVLost,
		FaultHandoffMissingField, FaultHandoffWrongTransferID, FaultHandoffWrongPorts:
	default:
		return f, fmt.Errorf("sim: unknown fault kind %q in %q", kind, s)
	}
	if needArg != hasArg {
		if needArg {
			return f, fmt.Errorf("sim: fault %q needs an argument (%s:<n>)", s, kind)
		}
		return f, fmt.Errorf("sim: fault %q takes no argument", s)
	}
	if needArg {
		n, err := strconv.Atoi(arg)
		if err != nil || n < 0 {
			return f, fmt.Errorf("sim: fault %q: argument must be a non-negative integer", s)
		}
		if kind == FaultStatus && (n < 400 || n > 599) {
			return f, fmt.Errorf("sim: fault %q: status must be 400..599", s)
		}
		f.Arg = n
	}
	return f, nil
}

// parseRequestFaults parses a sim_fault body value and keeps the faults addressed to role.
func parseRequestFaults(raw json.RawMessage, role string, dst []Fault) ([]Fault, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return dst, nil
	}
	var list []string
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return dst, fmt.Errorf("sim_fault: %v", err)
		}
		list = []string{s}
	} else if err := json.Unmarshal(raw, &list); err != nil {
		return dst, fmt.Errorf("sim_fault must be a string or a list of strings")
	}
	for _, s := range list {
		who, rest, ok := strings.Cut(s, ":")
		if !ok || (who != RolePrefill && who != RoleDecode && who != "any") {
			return dst, fmt.Errorf("sim_fault %q: want <prefill|decode|any>:<kind>[:<arg>]", s)
		}
		f, err := ParseFault(rest)
		if err != nil {
			return dst, err
		}
		if who == "any" || who == role {
			dst = append(dst, f)
		}
	}
	return dst, nil
}

// faultSet is the faults of one request, resolved.
type faultSet struct {
	status      int
	reset, hang bool
	malformed   bool
	noKV        bool
	kvLost      bool
	// MoRI-IO handoff faults.
	missingField, wrongTransferID, wrongPorts bool
	dieAfter                                  int // -1 = none
	slowFirstByte                             time.Duration
	delayBody                                 time.Duration
	delayBodySet                              bool
}

func resolveFaults(fs []Fault) faultSet {
	r := faultSet{dieAfter: -1}
	for _, f := range fs {
		switch f.Kind {
		case FaultStatus:
			if r.status == 0 {
				r.status = f.Arg
			}
		case FaultReset:
			r.reset = true
		case FaultHang:
			r.hang = true
		case FaultMalformed:
			r.malformed = true
		case FaultNoKVParams:
			r.noKV = true
		case FaultKVLost:
			r.kvLost = true
		case FaultHandoffMissingField:
			r.missingField = true
		case FaultHandoffWrongTransferID:
			r.wrongTransferID = true
		case FaultHandoffWrongPorts:
			r.wrongPorts = true
		case FaultDieAfter:
			r.dieAfter = f.Arg
		case FaultSlowFirstByte:
			r.slowFirstByte = time.Duration(f.Arg) * time.Millisecond
		case FaultDelayBody:
			r.delayBody = time.Duration(f.Arg) * time.Millisecond
			r.delayBodySet = true
		}
	}
	return r
}
