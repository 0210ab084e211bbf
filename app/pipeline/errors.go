package pipeline

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/smg-go/smg/adapters/engine/grpcengine"
	"github.com/smg-go/smg/app/dispatch"
	"github.com/smg-go/smg/domain/errs"
	"github.com/smg-go/smg/domain/wire"
	"github.com/smg-go/smg/domain/worker"
	"github.com/smg-go/smg/ports"
)

// fault is a failed leg, the cause a dispatch group is cancelled with; err is the
// dispatch.LegFault the attempt returns, w and status what w's breaker records.
type fault struct {
	err    error
	w      *worker.Live
	status int
}

func (f *fault) Error() string { return f.err.Error() }

// legFault turns a leg's RPC error into the attempt's failure blamed on the leg's worker
// (grpc.md §1.8, §3.3): <leg>_worker_failed_to_start before the leg's first item, else
// prefill_stream_error / decode_stream_error, the HTTP status mapped from the gRPC code
// (grpcengine.ErrorStatus). Retryable for 408/429/5xx except an UNAVAILABLE
// "sidecar_timeout…" (the engine's own deadline: another worker would wait as long).
// A gRPC message-size RESOURCE_EXHAUSTED (grpcengine.IsMessageTooLarge) is the request's
// own fault: a non-retryable 413 <leg>_worker_failed_to_start naming the sizes, blamed on
// no worker (no breaker records it). The log line is written with the request's ctx, so it
// carries the access line's request_id (and trace_id); the leg's engine rid is
// engine_request_id.
func (pl *Pipeline) legFault(ctx context.Context, leg string, l ports.GRPCLeg, err error, started bool) *fault {
	if errors.Is(err, errs.ErrUnresponsive) {
		return pl.stallFault(leg, l, err)
	}
	st, msg := grpcengine.ErrorStatus(err)
	code := wire.CodePrefillFailedToStart
	if leg == "decode" {
		code = wire.CodeDecodeFailedToStart
	}
	if started {
		code = wire.CodePrefillStreamError
		if leg == "decode" {
			code = "decode_stream_error"
		}
	}
	if grpcengine.IsMessageTooLarge(err) {
		code = wire.CodePrefillFailedToStart
		if leg == "decode" {
			code = wire.CodeDecodeFailedToStart
		}
		pl.log.WarnContext(ctx, "gRPC PD leg refused: message too large", "leg", leg, "worker", l.Worker.DisplayURL(), "engine_request_id", l.RequestID, "status", st, "err", msg)
		return &fault{err: &errs.Error{Status: st, Code: code, Leg: leg, Retryable: false,
			Message: leg + " worker " + l.Worker.ID + " refused the request: " + msg}}
	}
	if modelNotFound(st, msg) {
		pl.refreshFactsLater(l.Worker) // the worker's model list may be stale
	}
	retry := retryableStatus(st)
	if s, ok := status.FromError(err); ok && s.Code() == codes.Unavailable && strings.HasPrefix(s.Message(), "sidecar_timeout") {
		retry = false
	}
	if st < 500 {
		pl.log.WarnContext(ctx, "gRPC PD leg refused", "leg", leg, "worker", l.Worker.DisplayURL(), "engine_request_id", l.RequestID, "status", st, "err", msg)
	} else {
		pl.log.ErrorContext(ctx, "gRPC PD leg failed", "leg", leg, "worker", l.Worker.DisplayURL(), "engine_request_id", l.RequestID, "status", st, "err", msg)
	}
	e := &errs.Error{Status: st, Code: code, Leg: leg, Retryable: retry,
		Message: leg + " worker " + l.Worker.ID + " failed: " + msg}
	return &fault{err: dispatch.LegFault(e, l.Worker, st, nil), w: l.Worker, status: st}
}

// retryableStatus is the retry set of smg-spec.md §6.7: 408, 429, 500, 502, 503, 504.
func retryableStatus(s int) bool {
	switch s {
	case http.StatusRequestTimeout, http.StatusTooManyRequests, http.StatusInternalServerError,
		http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return true
	}
	return false
}

// record reports a leg outcome to the breakers, if any.
func (pl *Pipeline) record(w *worker.Live, status int) {
	if pl.outcomes != nil && w != nil {
		pl.outcomes.Record(w, status, nil)
	}
}

// deadline is a leg's timer channel and its timer (stopTimer): a nil channel (never
// fires) and a nil timer for a zero duration.
func deadline(d time.Duration) (<-chan time.Time, *time.Timer) {
	if d <= 0 {
		return nil, nil
	}
	t := time.NewTimer(d)
	return t.C, t
}

// stopTimer stops a deadline's timer; nil is none.
func stopTimer(t *time.Timer) {
	if t != nil {
		t.Stop()
	}
}

// timeoutFault is the 504 of a leg that sent nothing within its deadline
// (--prefill-timeout-secs until the prefill's answer; --first-byte-timeout-secs or
// --decode-timeout-secs until the decode's first item), counted as unresponsive: a retry
// avoids the worker for the rest of the request.
func (pl *Pipeline) timeoutFault(leg string, l ports.GRPCLeg) *fault {
	code, flag, lim := wire.CodePrefillTimeout, "--prefill-timeout-secs", pl.cfg.PrefillTimeout
	if leg == "decode" {
		code, flag, lim = wire.CodeDecodeTimeout, "--decode-timeout-secs", pl.cfg.DecodeTimeout
		if l.Stream {
			code, flag, lim = wire.CodeDecodeFirstByteTimeout, "--first-byte-timeout-secs", pl.cfg.FirstByteTimeout
		}
	}
	e := &errs.Error{Status: http.StatusGatewayTimeout, Code: code, Leg: leg, Retryable: true,
		Message: leg + " worker " + l.Worker.ID + " sent no output within " + flag + " (" + lim.String() + ")"}
	cause := fmt.Errorf("%s deadline: %w", leg, errs.ErrUnresponsive)
	return &fault{err: dispatch.LegFault(e, l.Worker, 0, cause), w: l.Worker}
}

// stallFault is the 504 of a leg the progress watchdog cut (app/watchdog: its worker made
// no progress within its stall bound and failed its canary): charged to the leg's worker as
// unresponsive, like timeoutFault, so the retry avoids it.
func (pl *Pipeline) stallFault(leg string, l ports.GRPCLeg, cause error) *fault {
	code := wire.CodePrefillTimeout
	if leg == "decode" {
		code = wire.CodeDecodeTimeout
		if l.Stream {
			code = wire.CodeDecodeFirstByteTimeout
		}
	}
	e := &errs.Error{Status: http.StatusGatewayTimeout, Code: code, Leg: leg, Retryable: true, Message: cause.Error()}
	return &fault{err: dispatch.LegFault(e, l.Worker, 0, cause), w: l.Worker}
}

// ambiguousTimeout is timeoutFault for a leg whose deadline passed while peer, the other
// leg's worker, had not answered either. dispatch's retry loop keeps the decode and changes
// the prefill to find out which one was silent, as for HTTP pairs, and charges only that one.
func (pl *Pipeline) ambiguousTimeout(leg string, l ports.GRPCLeg, peer *worker.Live) *fault {
	f := pl.timeoutFault(leg, l)
	dispatch.MarkAmbiguous(f.err, peer)
	return f
}

// kvLoadFault marks f, a vLLM decode's 500 (INTERNAL) before its first output after the
// prefill p handed it the KV (handed), as ambiguous with p (dispatch.MarkKVLoadAmbiguous):
// vLLM fails a KV load whose prefill died or freed its blocks (kv_load_failure_policy
// "fail") with the same error as a failure of its own, so the retry loop keeps the decode
// and changes the prefill to tell which it was. The prefill's held success (*prefillOK, its
// status, answered when it answered) goes with the fault and *prefillOK becomes 0. Other
// faults are returned unchanged.
func kvLoadFault(f *fault, handed, started bool, p *worker.Live, prefillOK *int, answered time.Time) *fault {
	if handed && !started && f.status == http.StatusInternalServerError {
		dispatch.MarkKVLoadAmbiguous(f.err, p, *prefillOK, answered)
		*prefillOK = 0
	}
	return f
}

// legDeadline is the deadline of a leg until its first answer.
func (pl *Pipeline) legDeadline(leg string, l ports.GRPCLeg) time.Duration {
	switch {
	case leg == "prefill":
		return pl.cfg.PrefillTimeout
	case l.Stream:
		return pl.cfg.FirstByteTimeout
	}
	return pl.cfg.DecodeTimeout
}
