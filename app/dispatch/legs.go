package dispatch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/smg-go/smg/domain/errs"
	"github.com/smg-go/smg/domain/handoff"
	"github.com/smg-go/smg/domain/worker"
	"github.com/smg-go/smg/ports"
)

// errBodyLimit bounds how much of an engine's error body is read for its message (bytes).
const errBodyLimit = 64 << 10

// open is one dispatch whose legs both answered with a 2xx head: the decode response is
// ready to relay. The prefill body (parallel path) is drained by drain.
type open struct {
	prefill, decode *worker.Live
	decodeResp      *ports.LegResponse
	// prefillResp is the parallel prefill response still to drain; nil on the sequential
	// path (consumed already) and when the prefill leg was skipped.
	prefillResp *ports.LegResponse
	// prefillLogprobs are the prefill's meta_info.input_token_logprobs when the request asked
	// for logprobs (read before relaying), else nil.
	prefillLogprobs []byte
	// start is when the prefill leg was dispatched (TTFT origin).
	start time.Time
	// prefillHead is when the prefill head arrived (parallel path).
	prefillHead time.Time
	// ctx is the legs' context; once it is done the gateway has cancelled them (a failed
	// leg, a gone client, the request timeout) and their ends record no outcome.
	ctx context.Context
	// prefillStatus is the prefill's 2xx head status, recorded when its body ends.
	prefillStatus int
	// cancel aborts both legs.
	cancel context.CancelFunc
	// drained is closed when the background prefill drain ends (nil when none runs).
	drained chan struct{}
	model   string
	runtime string
	// route is the request's API; it decides how a stream ends (streamEndsWithDone).
	route handoff.Route
	// forceJSON answers a non-streaming body as application/json whatever the engine said
	// (the request asked for logprobs).
	forceJSON bool
}

// finish waits for the prefill drain (it must finish before the legs' context ends, or the
// KV transfer would be aborted), then releases the legs. Safe to call more than once.
func (o *open) finish() {
	if o.drained != nil {
		<-o.drained
	}
	if o.decodeResp != nil {
		_ = o.decodeResp.Body.Close()
	}
	o.cancel()
}

type legResult struct {
	resp *ports.LegResponse
	err  error
	at   time.Time
	// errBody is a non-2xx answer's body (at most errBodyLimit bytes), read before the
	// other leg was cancelled.
	errBody []byte
}

// failed reports a transport error or a non-2xx head.
func (x *legResult) failed() bool { return x.err != nil || !ok2xx(x.resp.Status) }

func ok2xx(s int) bool { return s >= 200 && s < 300 }

// openParallel sends both SGLang legs at once and waits for both response heads (seed
// "Parallel Dispatch"; smg-spec.md §2.6). The first leg to fail — transport error or
// non-2xx head — ends the attempt and cancels the other leg at once, so no engine waits for
// a peer that will never come. The prefill leg runs on its own goroutine, the decode leg on
// the caller's (one goroutine and one handoff less per request); a failing prefill cancels
// the decode leg itself, so the caller never waits on a decode whose prefill is gone.
func (d *Dispatcher) openParallel(ctx context.Context, rq *handoff.Request, legs handoff.Legs,
	p, dc *worker.Live, hdr http.Header) (*open, error) {
	legCtx, cancel := context.WithCancel(ctx)
	start := time.Now()
	path := rq.Route.Path()
	pch := make(chan legResult, 1)
	go func() {
		r, err := d.engine.Send(legCtx, ports.LegRequest{Worker: p, Path: path, Body: legs.Prefill, Header: hdr})
		x := legResult{resp: r, err: err, at: time.Now()}
		if err == nil && !ok2xx(r.Status) {
			x.errBody = readLimited(r.Body) // before cancelling: the body is the error message
		}
		if x.failed() {
			cancel()
		}
		pch <- x
	}()
	dresp, derr := d.engine.Send(legCtx, ports.LegRequest{Worker: dc, Path: path, Body: legs.Decode, Header: hdr})

	// fail cancels both legs and closes whatever head arrived; prefill is the prefill's
	// result when it was received, else it is closed when it arrives.
	fail := func(e *errs.Error, prefill *legResult) (*open, error) {
		cancel()
		if dresp != nil {
			_ = dresp.Body.Close()
		}
		if prefill != nil {
			closeLate(prefill, nil)
		} else {
			go closeLate(nil, pch) // never blocks for long: the leg was cancelled
		}
		return nil, e
	}
	prefillFailed := func(x *legResult) (*open, error) {
		if x.err != nil {
			if ctx.Err() == nil {
				d.record(p, 0, x.err)
			}
			return fail(legTransportError("prefill", p, x.err, ctx), x)
		}
		d.record(p, x.resp.Status, nil)
		return fail(prefillError(x.resp.Status, x.errBody), x)
	}
	const waiting = "waiting for the prefill and decode response heads"
	if derr != nil || !ok2xx(dresp.Status) {
		switch {
		case ctx.Err() != nil:
			return fail(contextError(ctx, waiting), nil)
		case derr != nil && legCtx.Err() != nil:
			// Only a failing prefill cancels the legs while the request is live: its
			// failure is the answer, and this leg's cancellation is not a decode fault.
			x := <-pch
			return prefillFailed(&x)
		case derr != nil:
			d.record(dc, 0, derr)
			return fail(legTransportError("decode", dc, derr, ctx), nil)
		}
		d.record(dc, dresp.Status, nil)
		body := readLimited(dresp.Body)
		return fail(decodeError(dresp.Status, body), nil)
	}
	// The decode head is in (its outcome is recorded when its body ends); now the prefill's.
	var pr legResult
	select {
	case pr = <-pch:
		if pr.failed() {
			return prefillFailed(&pr)
		}
	case <-ctx.Done():
		return fail(contextError(ctx, waiting), nil)
	}
	o := &open{prefill: p, decode: dc, decodeResp: dresp, prefillResp: pr.resp, start: start,
		prefillHead: pr.at, ctx: legCtx, prefillStatus: pr.resp.Status, cancel: cancel, model: rq.Model, runtime: string(p.Runtime), route: rq.Route}
	return o, nil
}

// startDrain reads the prefill body to its end in the background — closing it early would
// abort the KV transfer (seed "Failures, Cancellation, and Streaming") — and records the
// prefill duration and the prefill worker's outcome when the drain ends. With keep, the body
// is read now, before returning, and its input_token_logprobs kept for the merge.
func (d *Dispatcher) startDrain(o *open, keep bool) {
	if o.prefillResp == nil {
		return
	}
	body := o.prefillResp.Body
	o.prefillResp = nil
	if keep {
		b, err := io.ReadAll(io.LimitReader(body, d.cfg.MaxPayloadSize))
		_ = body.Close()
		d.legEnded(o, o.prefill, o.prefillStatus, err)
		if err == nil {
			if lp, ok := handoff.PrefillLogprobs(b); ok {
				o.prefillLogprobs = lp
			}
		} else {
			d.log.Warn("prefill body read failed; continuing without prefill logprobs", "prefill", o.prefill.URL, "err", err)
		}
		d.metrics.ObservePrefillDuration(o.model, o.runtime, time.Since(o.start))
		return
	}
	o.drained = make(chan struct{})
	go func() {
		defer close(o.drained)
		_, err := io.Copy(io.Discard, body)
		_ = body.Close()
		d.legEnded(o, o.prefill, o.prefillStatus, err)
		if err != nil {
			d.log.Debug("prefill drain ended early", "prefill", o.prefill.URL, "err", err)
		}
		d.metrics.ObservePrefillDuration(o.model, o.runtime, time.Since(o.start))
	}()
}

// closeLate closes a leg response that already arrived (have) or that arrives later on ch.
func closeLate(have *legResult, ch <-chan legResult) {
	if have == nil {
		x := <-ch
		have = &x
	}
	if have.resp != nil {
		_ = have.resp.Body.Close()
	}
}

// readLimited reads up to errBodyLimit bytes of an error body and closes it.
func readLimited(rc io.ReadCloser) []byte {
	b, _ := io.ReadAll(io.LimitReader(rc, errBodyLimit))
	_ = rc.Close()
	return b
}

// legTransportError is the 502 for a leg that never produced a response head: refused,
// reset, or timed out (seed "Error Codes": decode transport error answers 502
// decode_request_failed; smg-spec.md §2.10.4 prefill_request_failed). When the client's own
// context ended, the context error wins.
func legTransportError(leg string, w *worker.Live, err error, ctx context.Context) *errs.Error {
	if ctx.Err() != nil {
		return contextError(ctx, "waiting for the "+leg+" leg")
	}
	code := "decode_request_failed"
	if leg == "prefill" {
		code = "prefill_request_failed"
	}
	return &errs.Error{Status: http.StatusBadGateway, Code: code, Leg: leg, Retryable: true,
		Message: fmt.Sprintf("%s%s transport error (%s): %v", string(leg[0]-32), leg[1:], w.URL, err)}
}

// contextError maps an ended request context: the shutdown grace deadline answers 503
// server_shutting_down (shutdown.go); the request timeout answers 504; a client that went
// away gets a 499-style error nobody reads (logged only).
func contextError(ctx context.Context, what string) *errs.Error {
	if shutdownCut(ctx) {
		return shutdownError(what)
	}
	if errors.Is(context.Cause(ctx), context.DeadlineExceeded) || errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return &errs.Error{Status: http.StatusGatewayTimeout, Code: "request_timeout",
			Message: "request timed out " + what}
	}
	return &errs.Error{Status: 499, Code: "client_closed_request", Message: "client closed the request " + what}
}
