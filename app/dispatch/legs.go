package dispatch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/smg-go/smg/domain/errs"
	"github.com/smg-go/smg/domain/handoff"
	"github.com/smg-go/smg/domain/wire"
	"github.com/smg-go/smg/domain/worker"
	"github.com/smg-go/smg/ports"
)

// errBodyLimit bounds how much of an engine's error body is read for its message (bytes).
const errBodyLimit = 64 << 10

// open is one dispatch whose decode leg answered with a 2xx head: the decode response is
// ready to relay. On the parallel path the prefill leg runs on its own goroutine until its
// body ends (runPrefill) and reports once on pdone.
type open struct {
	prefill, decode *worker.Live
	decodeResp      *ports.LegResponse
	// prefillLogprobs are the prefill's meta_info.input_token_logprobs when the request asked
	// for logprobs (set by awaitPrefill), else nil.
	prefillLogprobs []byte
	// start is when the legs were dispatched (TTFT origin).
	start time.Time
	// ctx is the legs' context; once it is done the gateway has cancelled them (a failed
	// leg, a gone client, the request timeout) and their ends record no outcome. A leg that
	// fails cancels it with its *legFault as the cause.
	ctx    context.Context
	cancel context.CancelCauseFunc
	// reqCtx is the request's context (the client and --request-timeout-secs); its end
	// cancels the legs until detach is called.
	reqCtx context.Context
	detach func() bool
	// pdone delivers the parallel prefill's result once; nil on the sequential path.
	pdone chan prefillResult
	// pResult is what pdone delivered, once pEnded.
	pResult prefillResult
	pEnded  bool
	// prefillDone is set once the prefill's body ended well (always on the sequential path);
	// decodeOut once the decode produced output (its first body byte when streaming, its
	// head otherwise). Each leg reads the other's to decide whom a KV failure blames.
	prefillDone atomic.Bool
	decodeOut   atomic.Bool
	// decodeHead is set once the decode's 2xx head arrived: a streaming decode engine sends
	// it at once, so it is alive and waiting for the KV.
	decodeHead atomic.Bool
	// dtimer is the decode's first-output deadline, stopped at its first output.
	dtimer         legTimer
	stream         bool
	model, runtime string
	// route is the request's API; it decides how a stream ends (streamEndsWithDone).
	route handoff.Route
	// forceJSON answers a non-streaming body as application/json whatever the engine said
	// (the request asked for logprobs).
	forceJSON bool
	// keep reads the prefill body for its logprobs before the decode output is relayed.
	keep bool
	// recomputeRead is set once a streamed decode's own usage was read for a silent
	// recompute (the detector counts each answer once).
	recomputeRead bool
	// usage is the prompt usage the prefill computed (set by awaitPrefill, or at once on the
	// sequential path); nil when the prefill reported none.
	usage *handoff.PromptUsage
	// kvPull is set on the sequential path when the decode leg was told to load the KV the
	// prefill handed off (the params were relayed or minted): a 500 from it may then be the
	// prefill's KV that is gone (kvLoadFault).
	kvPull bool
	// holdPrefill makes the sequential prefill's success wait in held until the decode's
	// answer shows whether the handoff was good (releasePrefill, or takeHeld into a
	// kvLoadFault).
	holdPrefill bool
	held        *heldOutcome
}

// takeHeld returns the held prefill success (nil: none) and clears it: a fault that takes
// it decides whether it is recorded.
func (o *open) takeHeld() *heldOutcome {
	h := o.held
	o.held = nil
	return h
}

// prefillResult is how a parallel prefill leg ended: fault when it failed (it also
// cancelled the legs with it), logprobs when they were kept.
type prefillResult struct {
	fault    *legFault
	logprobs []byte
	usage    *handoff.PromptUsage
}

// awaitPrefill waits for the parallel prefill leg to end (at once on the sequential path)
// and returns its fault, if any. It keeps the prefill's logprobs for the merge. Safe to call
// more than once.
func (o *open) awaitPrefill() *legFault {
	if o.pdone == nil {
		return nil
	}
	if !o.pEnded {
		o.keepResult(<-o.pdone)
	}
	return o.pResult.fault
}

// prefillEnded reports, without waiting, whether the parallel prefill leg has reported on
// o.pdone (keeping its result for awaitPrefill).
func (o *open) prefillEnded() bool {
	if o.pEnded {
		return true
	}
	select {
	case r := <-o.pdone:
		o.keepResult(r)
		return true
	default:
		return false
	}
}

func (o *open) keepResult(r prefillResult) {
	o.pResult, o.pEnded = r, true
	o.prefillLogprobs = r.logprobs
	o.usage = r.usage
}

// finish ends an attempt's legs. Once the response was committed and the decode ended,
// the client's response is already complete: the prefill leg, if still running, is drained
// in the background — closing it early would abort the KV transfer (seed "Failures,
// Cancellation, and Streaming") — bounded by the request's deadline but no longer by the
// client, and a prefill fault that comes then is recorded on its worker. An uncommitted
// attempt's legs are cancelled at once (its fault is its error, recorded by the retry
// loop). Safe to call more than once.
func (d *Dispatcher) finish(o *open, committed bool) {
	o.dtimer.stop() // a non-streaming body that was never read keeps its deadline until here
	if o.decodeResp != nil {
		_ = o.decodeResp.Body.Close()
	}
	if !committed || o.pdone == nil {
		o.cancel(nil)
		return
	}
	if o.detach != nil {
		o.detach()
	}
	if o.prefillEnded() { // nothing left to drain: no goroutine, no deadline timer
		if f := o.awaitPrefill(); f != nil {
			d.recordFault(f)
		}
		o.cancel(nil)
		return
	}
	go func() {
		if dl, ok := o.reqCtx.Deadline(); ok { // the drain stays bounded by the request's deadline
			t := time.AfterFunc(time.Until(dl), func() { o.cancel(context.DeadlineExceeded) })
			defer t.Stop()
		}
		if f := o.awaitPrefill(); f != nil {
			d.recordFault(f)
		}
		o.cancel(nil)
	}()
}

// legContext is an attempt's legs' context: cancelled when the request's context ends (the
// client, --request-timeout-secs, shutdown; with its cause) until detach is called, so a
// prefill drained after the client's response is complete is not cut by the handler's
// return (finish then bounds it by the request's deadline itself).
func legContext(req context.Context) (context.Context, context.CancelCauseFunc, func() bool) {
	ctx, cancel := context.WithCancelCause(context.WithoutCancel(req))
	detach := context.AfterFunc(req, func() { cancel(context.Cause(req)) })
	return ctx, cancel, detach
}

func ok2xx(s int) bool { return s >= 200 && s < 300 }

// openParallel sends both SGLang legs at once (seed "Parallel Dispatch"; smg-spec.md §2.6)
// and returns once the decode leg's response head is a 2xx; the prefill leg goes on on its
// own goroutine (runPrefill), which reads its body to the end and checks it. The first leg
// to fail ends the attempt and cancels the other at once, with a *legFault naming the
// culprit as the cause:
//   - a prefill that sends no head within --prefill-timeout-secs (prefill_timeout);
//   - a decode whose first output does not arrive within its deadline: its own fault once
//     the prefill answered, the prefill's while the prefill had not;
//   - a KV-handoff failure reported by one engine while the other had not answered blames
//     the silent one (SGLang's KVTransferError; engines.md §2.4), never the reporter;
//   - a prefill body that is not a valid engine response, or that ends early.
//
// Nothing waits for the prefill's head: a decode answer that is malformed fails at once.
func (d *Dispatcher) openParallel(ctx context.Context, rq *handoff.Request, legs handoff.Legs,
	p, dc *worker.Live, hdr http.Header) (*open, error) {
	legCtx, cancel, detach := legContext(ctx)
	o := &open{prefill: p, decode: dc, start: time.Now(), ctx: legCtx, cancel: cancel, detach: detach, reqCtx: ctx, pdone: make(chan prefillResult, 1),
		stream: rq.Stream, model: metricModel(rq.Model, p), runtime: string(p.Runtime), route: rq.Route, keep: rq.Logprobs, forceJSON: rq.Logprobs}
	path := rq.Route.Path()
	o.dtimer = d.decodeTimer(o)
	ptimer := startLegTimer(d.cfg.PrefillTimeout, func() {
		f := d.prefillTimeoutFault(p, "sent no response head")
		if !o.decodeHead.Load() && !o.decodeOut.Load() {
			if lim := d.decodeLimit(o.stream); lim > 0 && lim <= d.cfg.PrefillTimeout {
				return // an equal decode deadline is passing too: it speaks for the pair
			}
			f.ambiguous, f.peer = true, dc // the decode was silent too
		}
		cancel(f)
	})
	go d.runPrefill(o, ptimer, ports.LegRequest{Worker: p, Path: path, Body: legs.Prefill, Header: hdr})

	resp, err := d.engine.Send(legCtx, ports.LegRequest{Worker: dc, Path: path, Body: legs.Decode, Header: hdr})
	if err != nil {
		o.dtimer.stop()
		return nil, d.attemptError(ctx, o, func() *legFault {
			return &legFault{w: dc, cause: err, e: legTransportError("decode", dc, err, ctx)}
		})
	}
	if !ok2xx(resp.Status) {
		body := readLimited(resp.Body)
		o.dtimer.stop()
		return nil, d.attemptError(ctx, o, func() *legFault {
			if msg := upstreamMessage(body); handoff.IsKVTransferFailure(msg) && !o.prefillDone.Load() {
				return d.bootstrapFault("prefill", p, msg)
			}
			return &legFault{w: dc, status: resp.Status, e: decodeError(resp.Status, body)}
		})
	}
	o.decodeResp = resp
	o.decodeHead.Store(true)
	if !rq.Stream {
		// A non-streaming head comes with the answer; the deadline runs on until the body
		// is read (relayBody), so an engine that stalls after its head is bounded too.
		o.decodeOut.Store(true)
	}
	return o, nil
}

// decodeTimer arms the decode leg's first-output deadline (--first-byte-timeout-secs for a
// stream, --decode-timeout-secs otherwise). When it passes, the culprit is the decode once
// the prefill answered; the prefill while the decode, its head sent, was alive and waiting
// for the KV; and either while both were silent (an SGLang prefill waits for its decode to
// claim the room, so a silent decode and a silent prefill look alike): that fault is marked
// ambiguous, and the retry loop finds out which (tries.settle).
func (d *Dispatcher) decodeTimer(o *open) legTimer {
	lim := d.decodeLimit(o.stream)
	return startLegTimer(lim, func() {
		switch {
		case o.prefillDone.Load():
			o.cancel(d.decodeTimeoutFault(o.decode, o.stream))
		case o.decodeHead.Load():
			o.cancel(d.prefillTimeoutFault(o.prefill, "had not answered while the decode waited "+secsText(lim)+" for its output"))
		default:
			f := d.decodeTimeoutFault(o.decode, o.stream)
			f.ambiguous, f.peer = true, o.prefill
			o.cancel(f)
		}
	})
}

// decodeLimit is the decode leg's first-output deadline: --first-byte-timeout-secs for a
// stream, --decode-timeout-secs otherwise (0: none).
func (d *Dispatcher) decodeLimit(stream bool) time.Duration {
	if stream {
		return d.cfg.FirstByteTimeout
	}
	return d.cfg.DecodeTimeout
}

// attemptError is the error of an attempt that failed before anything reached the client:
// the fault the legs were cancelled with when one leg failed first, the client's or the
// request's end, else the fault fallback builds (the legs are cancelled with it). The
// response being relayed, if any, is closed.
func (d *Dispatcher) attemptError(ctx context.Context, o *open, fallback func() *legFault) error {
	if o.decodeResp != nil {
		_ = o.decodeResp.Body.Close()
	}
	if f := causeFault(o.ctx); f != nil {
		return f
	}
	if ctx.Err() != nil {
		o.cancel(nil)
		return contextError(ctx, "waiting for the prefill and decode legs")
	}
	f := fallback()
	o.cancel(f)
	return f
}

// runPrefill runs the parallel prefill leg to its end and reports on o.pdone: the head
// within ptimer's deadline, then the whole body, checked (JSON, or SSE events each JSON or
// [DONE]) — closing it early would abort the KV transfer (seed "Failures, Cancellation,
// and Streaming"). A failure cancels the legs with its fault at once; a leg cancelled by
// the other leg, the client or the request timeout reports nothing and records nothing.
// A prefill that ends well records its status and duration.
func (d *Dispatcher) runPrefill(o *open, ptimer legTimer, req ports.LegRequest) {
	var res prefillResult
	defer func() { o.pdone <- res }()
	defer prefillEnded(o.reqCtx) // the prefill's tokens are done, whatever the outcome
	p := o.prefill
	fail := func(f *legFault) {
		if o.ctx.Err() != nil {
			return // cancelled first: this failure is a consequence
		}
		res.fault = f
		o.cancel(f)
	}
	resp, err := d.engine.Send(o.ctx, req)
	ptimer.stop()
	if err != nil {
		fail(&legFault{w: p, cause: err, e: legTransportError("prefill", p, err, o.ctx)})
		if res.fault == nil {
			res.fault = causeFault(o.ctx).own(p)
		}
		return
	}
	defer resp.Body.Close()
	if !ok2xx(resp.Status) {
		body := readLimited(resp.Body)
		if msg := upstreamMessage(body); handoff.IsKVTransferFailure(msg) && !o.decodeOut.Load() {
			if o.ctx.Err() == nil {
				fail(d.bootstrapFault("decode", o.decode, msg))
			}
			return
		}
		fail(&legFault{w: p, status: resp.Status, e: prefillError(resp.Status, body)})
		return
	}
	kept, usage, err := d.readPrefillBody(resp, o.route, o.keep)
	if err != nil {
		if errors.Is(err, errMalformed) {
			fail(&legFault{w: p, status: http.StatusBadGateway, cause: errMalformed, e: prefillInvalid(p, err)})
		} else {
			fail(&legFault{w: p, cause: err, e: prefillReadFailed(p, err)})
		}
		return
	}
	o.prefillDone.Store(true)
	res.usage = usage
	d.record(p, resp.Status, nil)
	d.metrics.ObservePrefillDuration(o.model, o.runtime, time.Since(o.start))
	if kept != nil {
		if lp, ok := handoff.PrefillLogprobs(kept); ok {
			res.logprobs = lp
		}
	}
}

// own returns f when it blames w (the prefill's own deadline passed), else nil.
func (f *legFault) own(w *worker.Live) *legFault {
	if f != nil && f.w == w {
		return f
	}
	return nil
}

// prefillCheckLimit bounds how much of a non-streaming prefill body is held to check that
// it is JSON (bytes); a larger body is drained unchecked. Prefill answers carry one token
// (plus input logprobs when asked), far below it.
const prefillCheckLimit = 4 << 20

// readPrefillBody reads a 2xx prefill body to its end and checks it: an SSE body's data
// lines must be JSON or [DONE], and a stream of a route that ends with [DONE] must reach
// it; a JSON body must parse. It returns the whole body when keep (logprobs), else nil, the
// prompt usage the prefill reported (nil: none), and errMalformed (wrapped) or the read
// error.
func (d *Dispatcher) readPrefillBody(resp *ports.LegResponse, route handoff.Route, keep bool) ([]byte, *handoff.PromptUsage, error) {
	if isEventStream(resp.Header) {
		var g handoff.LineGuard
		var scan handoff.DoneScanner
		var kept []byte
		var usage *handoff.PromptUsage
		lines := func(span []byte) error {
			handoff.EachDataLine(span, func(p []byte) {
				if u, ok := handoff.PrefillUsage(route, p); ok {
					usage = &u
				}
			})
			return nil
		}
		buf := getRelayBuf()
		defer putRelayBuf(buf)
		done := false
		for {
			n, err := resp.Body.Read(*buf)
			if n > 0 {
				chunk := (*buf)[:n]
				if keep && len(kept) < int(d.cfg.MaxPayloadSize) {
					kept = append(kept, chunk...)
				}
				if ferr := g.Feed(chunk, lines); ferr != nil {
					return nil, nil, fmt.Errorf("%w: %v", errMalformed, ferr)
				}
				if _, ok := scan.Feed(chunk); ok {
					done = true
				}
			}
			if errors.Is(err, io.EOF) {
				if !done && streamEndsWithDone(route) {
					return nil, nil, io.ErrUnexpectedEOF
				}
				return kept, usage, nil
			}
			if err != nil {
				return nil, nil, err
			}
		}
	}
	limit := int64(prefillCheckLimit)
	if keep {
		limit = d.cfg.MaxPayloadSize
	}
	buf, err := readPooled(resp.Body, limit, contentLength(resp.Header))
	defer putBody(buf)
	if err != nil {
		return nil, nil, err
	}
	if int64(buf.Len()) >= limit {
		_, err := io.Copy(io.Discard, resp.Body) // too large to check: drain it
		return nil, nil, err
	}
	if e := checkJSONBody(resp.Header, buf.Bytes()); e != nil {
		return nil, nil, fmt.Errorf("%w: %d bytes", errMalformed, buf.Len())
	}
	var usage *handoff.PromptUsage
	if u, ok := handoff.PrefillUsage(route, buf.Bytes()); ok {
		usage = &u
	}
	if keep {
		return append([]byte(nil), buf.Bytes()...), usage, nil
	}
	return nil, usage, nil
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
// context ended, the context error wins. A leg the progress watchdog cut (err wraps
// errs.ErrUnresponsive) is the 504 of the leg's deadline instead. The message names the
// worker by id; the log keeps its URL.
func legTransportError(leg string, w *worker.Live, err error, ctx context.Context) *errs.Error {
	if ctx.Err() != nil {
		return contextError(ctx, "waiting for the "+leg+" leg")
	}
	if errors.Is(err, errs.ErrUnresponsive) { // the progress watchdog cut the leg: a deadline
		code := wire.CodeDecodeTimeout
		if leg == "prefill" {
			code = wire.CodePrefillTimeout
		}
		return &errs.Error{Status: http.StatusGatewayTimeout, Code: code, Leg: leg, Retryable: true, Message: err.Error()}
	}
	code := "decode_request_failed"
	if leg == "prefill" {
		code = "prefill_request_failed"
	}
	return &errs.Error{Status: http.StatusBadGateway, Code: code, Leg: leg, Retryable: true,
		Message: fmt.Sprintf("%s%s worker %s transport error: %s", string(leg[0]-32), leg[1:], w.ID, transportCause(err))}
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
