package grpcsim

import (
	"fmt"
	"strconv"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
)

// FaultMetadata is the gRPC request metadata key carrying per-request faults, one
// "<role>:<kind>[:<arg>]" per value (role "prefill", "decode", "encode" or "any"), the
// grammar of the HTTP simulator's sim_fault.
const FaultMetadata = "x-sim-fault"

// Fault kinds. They apply to Generate (and Encode) only, never to info, health or abort.
const (
	// FaultStatus "status:<http code>" fails the RPC at once with the gRPC code a servicer
	// uses for that HTTP status (400 INVALID_ARGUMENT, 404 NOT_FOUND, 408/504
	// DEADLINE_EXCEEDED, 429 RESOURCE_EXHAUSTED, 501 UNIMPLEMENTED, 503 UNAVAILABLE, other
	// INTERNAL; grpc.md §3.2-3.3). No handoff takes place.
	FaultStatus = "status"
	// FaultReset closes the client's TCP connection without answering.
	FaultReset = "reset"
	// FaultHang answers nothing until the RPC is cancelled (counted in aborted) or HangMax
	// passes (then UNAVAILABLE).
	FaultHang = "hang"
	// FaultDieAfter "die-after:<k>" streams k token chunks, then closes the connection.
	FaultDieAfter = "die-after"
	// FaultMalformed sends one GenerateResponse with neither chunk nor complete, then ends
	// the stream.
	FaultMalformed = "malformed"
	// FaultSlowFirstByte "slow-first-byte:<ms>" waits before doing anything.
	FaultSlowFirstByte = "slow-first-byte"
	// FaultDelayBody "delay-body:<ms>" sends the response headers at once and the first
	// message <ms> later.
	FaultDelayBody = "delay-body"
	// FaultNoKVParams makes a vLLM prefill return no kv_transfer_params_json and keep no KV,
	// and a vLLM decode drop the kv_transfer_params_json it is given: it fetches nothing,
	// recomputes the prompt (counted in recomputed_prompts) and reports no cached tokens.
	FaultNoKVParams = "no-kv-params"
	// FaultKVLost makes a vLLM NIXL prefill return its kv_transfer_params_json but keep no
	// KV, as an engine that died or restarted after answering: the decode's pull finds
	// nothing and fails with INTERNAL (kv_load_failure_policy=fail).
	FaultKVLost = "kv-lost"
	// FaultSidecarTimeout fails with UNAVAILABLE and a message prefixed "sidecar_timeout",
	// the servicer's non-retryable timeout (grpc.md §3.5).
	FaultSidecarTimeout = "sidecar-timeout"
	// FaultOOVTokens makes every generated token id OOVTokenID (outside any tokenizer's
	// vocabulary), as a decode with a wrong model or a corrupted sampler would send.
	FaultOOVTokens = "oov-tokens"
)

// OOVTokenID is the token id the oov-tokens fault generates: far beyond the vocabulary of
// any tokenizer the simulators hand out.
const OOVTokenID uint32 = 1<<31 - 1

// Fault is one parsed fault; Arg is the HTTP code, token count or milliseconds.
type Fault struct {
	Kind string
	Arg  int
}

// ParseFault parses "<kind>[:<arg>]" (no role prefix); errors name the bad part.
func ParseFault(s string) (Fault, error) {
	kind, arg, hasArg := strings.Cut(s, ":")
	f := Fault{Kind: kind}
	needArg := false
	switch kind {
	case FaultStatus, FaultDieAfter, FaultSlowFirstByte, FaultDelayBody:
		needArg = true
	case FaultReset, FaultHang, FaultMalformed, FaultNoKVParams, FaultKVLost, FaultSidecarTimeout, FaultOOVTokens:
	default:
		return f, fmt.Errorf("grpcsim: unknown fault kind %q in %q", kind, s)
	}
	if needArg != hasArg {
		if needArg {
			return f, fmt.Errorf("grpcsim: fault %q needs an argument (%s:<n>)", s, kind)
		}
		return f, fmt.Errorf("grpcsim: fault %q takes no argument", s)
	}
	if needArg {
		n, err := strconv.Atoi(arg)
		if err != nil || n < 0 {
			return f, fmt.Errorf("grpcsim: fault %q: argument must be a non-negative integer", s)
		}
		if kind == FaultStatus && (n < 400 || n > 599) {
			return f, fmt.Errorf("grpcsim: fault %q: status must be 400..599", s)
		}
		f.Arg = n
	}
	return f, nil
}

// requestFaults returns the instance faults followed by the x-sim-fault values addressed
// to role (or "any"). A malformed value is an error (INVALID_ARGUMENT for the caller).
func requestFaults(md metadata.MD, role string, instance []Fault) ([]Fault, error) {
	out := append([]Fault(nil), instance...)
	for _, v := range md.Get(FaultMetadata) {
		for _, s := range strings.Split(v, ",") {
			s = strings.TrimSpace(s)
			if s == "" {
				continue
			}
			r, rest, ok := strings.Cut(s, ":")
			if !ok {
				return nil, fmt.Errorf("%s %q: want <role>:<kind>[:<arg>]", FaultMetadata, s)
			}
			f, err := ParseFault(rest)
			if err != nil {
				return nil, err
			}
			if r == role || r == "any" {
				out = append(out, f)
			}
		}
	}
	return out, nil
}

// codeForHTTP is the gRPC code a servicer raises for an HTTP-style status (grpc.md §3.2).
func codeForHTTP(status int) codes.Code {
	switch status {
	case 400, 422:
		return codes.InvalidArgument
	case 401:
		return codes.Unauthenticated
	case 403:
		return codes.PermissionDenied
	case 404:
		return codes.NotFound
	case 408, 504:
		return codes.DeadlineExceeded
	case 409:
		return codes.Aborted
	case 429:
		return codes.ResourceExhausted
	case 501:
		return codes.Unimplemented
	case 503:
		return codes.Unavailable
	}
	return codes.Internal
}
