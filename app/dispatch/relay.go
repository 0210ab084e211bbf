package dispatch

import (
	"errors"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/smg-go/smg/domain/errs"
	"github.com/smg-go/smg/domain/handoff"
	"github.com/smg-go/smg/domain/wire"
	"github.com/smg-go/smg/ports"
)

// relayBufSize is the read size of the streaming relay (bytes). Each read is written and
// flushed at once: no decode chunk waits in the gateway (style.md pattern 8). An engine
// flushes one SSE event per chunk and a read returns at most one chunk, so a token event
// (~200 B, a few KB with logprobs) passes in one read; a larger event is relayed in
// several flushed pieces. The buffer is held for the stream's lifetime (pooled,
// bufpool.go), so this size is most of the gateway's memory per open stream.
const relayBufSize = 8 << 10

// peekLimit bounds what relayStream holds back while it waits for a vLLM stream's first
// output past its role-only chunks (bytes).
const peekLimit = 64 << 10

// errStreamDone stops a LineGuard feed once the [DONE] event was written.
var errStreamDone = errors.New("stream done")

// relayStream streams the decode SSE body to the client as it arrives (seed "HTTP streams
// start on the response heads"). Nothing is committed before the decode's first output:
// a leg that fails before it — its deadline, a KV handoff failure the decode reports while
// the prefill has not answered, the prefill failing — is an attempt error the caller may
// retry on a new pair (committed false). With logprobs the prefill body is awaited before
// the first write. After the first write every event is checked (handoff.LineGuard): a
// garbled event is never relayed but ends the stream with a decode_invalid_response error
// event; a stream that breaks, or that ends without [DONE] on a route terminated by it
// (streamEndsWithDone), gets an error event naming the culprit followed by [DONE], never a
// silent truncation. It stops after the line-anchored [DONE] event.
func (d *Dispatcher) relayStream(w http.ResponseWriter, o *open) (committed bool, err error) {
	body := o.decodeResp.Body
	bp := getRelayBuf()
	defer putRelayBuf(bp)
	defer d.releasePrefill(o) // a sequential prefill's held success, unless a fault took it
	buf := *bp
	n, rerr := readSome(body, buf)
	if !o.kvPull {
		o.dtimer.stop()
	}
	if n == 0 {
		o.dtimer.stop()
		return false, d.attemptError(o.reqCtx, o, func() *legFault {
			if rerr == nil || errors.Is(rerr, io.EOF) {
				rerr = io.ErrUnexpectedEOF
			}
			return &legFault{w: o.decode, cause: rerr, e: &errs.Error{Status: http.StatusBadGateway,
				Code: wire.CodeDecodeStreamFailed, Leg: "decode", Retryable: true,
				Message: "decode worker " + o.decode.ID + " stream ended before any output: " + transportCause(rerr)}}
		})
	}
	guard := handoff.LineGuard{WantFirstOutput: o.kvPull}
	var pending []byte
	collect := func(b []byte) error { pending = append(pending, b...); return nil }
	ferr := guard.Feed(buf[:n], collect)
	if ferr == nil && guard.First != nil && !o.prefillDone.Load() {
		if msg, ok := handoff.EngineErrorEvent(guard.First); ok && handoff.IsKVTransferFailure(msg) {
			return false, d.attemptError(o.reqCtx, o, func() *legFault { return d.bootstrapFault("prefill", o.prefill, msg) })
		}
	}
	if o.kvPull {
		// A vLLM decode loading handed-off KV opens a chat stream with a role-only chunk
		// whatever comes next; its first output is the first other event, and a KV load that
		// failed is an error event there (code 500). Nothing is committed until it arrives
		// (within the first-output deadline): that failure is ambiguous with the prefill
		// and retried like a 500 head.
		for ferr == nil && rerr == nil && guard.FirstOutput == nil && len(pending) < peekLimit {
			if n, rerr = body.Read(buf); n > 0 {
				ferr = guard.Feed(buf[:n], collect)
			}
		}
		o.dtimer.stop()
		if causeFault(o.ctx) != nil || o.reqCtx.Err() != nil {
			return false, d.attemptError(o.reqCtx, o, nil) // the deadline passed, or the client left
		}
		if ferr == nil && handoff.EngineErrorCode(guard.FirstOutput) == http.StatusInternalServerError {
			first := guard.FirstOutput
			return false, d.attemptError(o.reqCtx, o, func() *legFault {
				if sf := staleEngineIDFault(o.prefill, o.decode, http.StatusInternalServerError, first); sf != nil {
					o.takeHeld() // the prefill's answer handed off under a stale id: no success
					return sf
				}
				return kvLoadFault(&legFault{w: o.decode, status: http.StatusInternalServerError,
					e: decodeError(http.StatusInternalServerError, first)}, o.prefill, o.takeHeld())
			})
		}
		d.releasePrefill(o)
	}
	o.decodeOut.Store(true)
	if o.keep {
		if f := o.awaitPrefill(); f != nil {
			return false, d.attemptError(o.reqCtx, o, func() *legFault { return f })
		}
	}

	h := w.Header()
	copyResponseHeaders(h, o.decodeResp.Header)
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set(wire.HeaderRoutedWorker, o.decode.ID)
	w.WriteHeader(o.decodeResp.Status)
	rc := http.NewResponseController(w)
	d.metrics.ObserveTTFT(o.model, o.runtime, time.Since(o.start))

	var scan handoff.DoneScanner
	var split *handoff.EventSplitter
	if o.prefillLogprobs != nil {
		split = &handoff.EventSplitter{}
	}
	emit := func(b []byte) error {
		b = d.prefillUsageInto(o, b)
		end, done := scan.Feed(b)
		var werr error
		if split != nil {
			werr = d.writeMerged(w, split, b[:end], o.prefillLogprobs)
		} else {
			_, werr = w.Write(b[:end])
		}
		if werr != nil {
			return werr
		}
		if done {
			return errStreamDone
		}
		return nil
	}
	// step writes what the guard let through and reports whether the relay is over.
	step := func(werr error) bool {
		switch {
		case errors.Is(werr, errStreamDone):
			_ = rc.Flush()
			d.legEnded(o, o.decode, o.decodeResp.Status, nil)
			return true
		case errors.Is(werr, handoff.ErrMalformedEvent):
			d.record(o.decode, http.StatusBadGateway, errMalformed)
			d.log.WarnContext(o.reqCtx, "decode streamed a malformed event", "decode", o.decode.DisplayURL(), "decode_id", o.decode.ID)
			o.cancel(nil)
			d.streamFail(w, rc, &errs.Error{Status: http.StatusBadGateway, Code: wire.CodeDecodeInvalidResponse, Leg: "decode",
				Message: "decode worker " + o.decode.ID + " streamed an event that is not valid JSON"})
			return true
		case werr != nil:
			o.cancel(nil) // client gone: abort both legs
			return true
		}
		if rc.Flush() != nil {
			o.cancel(nil)
			return true
		}
		return false
	}
	werr := emit(pending)
	if werr == nil {
		werr = ferr
	}
	if step(werr) {
		return true, nil
	}
	if rerr == nil {
		for {
			n, rerr = body.Read(buf)
			if n > 0 && step(guard.Feed(buf[:n], emit)) {
				return true, nil
			}
			if rerr != nil {
				break
			}
		}
	}
	if split != nil {
		if rest := split.Flush(); len(rest) > 0 {
			_, _ = w.Write(rest)
		}
	}
	if errors.Is(rerr, io.EOF) && !guard.Pending() && !streamEndsWithDone(o.route) {
		d.legEnded(o, o.decode, o.decodeResp.Status, nil)
		_ = rc.Flush()
		return true, nil // an Anthropic or Responses stream ends with its own terminal event
	}
	if e := d.streamBroke(o, rerr); e.Status != 499 {
		d.streamFail(w, rc, e)
	} else {
		markClientGone(ports.RequestInfoFrom(o.reqCtx), e)
	}
	return true, nil
}

// readSome reads until it gets at least one byte or an error.
func readSome(r io.Reader, buf []byte) (int, error) {
	for {
		n, err := r.Read(buf)
		if n > 0 || err != nil {
			return n, err
		}
	}
}

// streamFail ends a committed stream with e as an error event and [DONE].
func (d *Dispatcher) streamFail(w http.ResponseWriter, rc *http.ResponseController, e *errs.Error) {
	_, _ = w.Write(handoff.StreamError(e))
	_ = rc.Flush()
}

// streamBroke classifies a decode stream that ended without its terminal event after its
// first output and returns the in-stream error to send: the fault a leg cancelled the legs
// with (a prefill whose body failed or ended early, recorded on that worker), the request
// timeout (504 request_timeout, no outcome), a gone client (499, nothing sent), else a
// broken stream (502 decode_stream_failed, a decode failure: a decode that dies mid-stream
// counts against its breaker).
func (d *Dispatcher) streamBroke(o *open, rerr error) *errs.Error {
	if f := causeFault(o.ctx); f != nil {
		d.recordFault(f)
		return f.e
	}
	if o.ctx.Err() != nil {
		return contextError(o.ctx, "while streaming the decode output")
	}
	msg := "decode stream ended before [DONE]"
	if rerr != nil && !errors.Is(rerr, io.EOF) {
		msg = "decode stream failed: " + transportCause(rerr)
	} else {
		rerr = io.ErrUnexpectedEOF
	}
	d.record(o.decode, 0, rerr)
	d.log.WarnContext(o.reqCtx, "decode stream broke", "decode", o.decode.DisplayURL(), "decode_id", o.decode.ID, "err", rerr)
	return &errs.Error{Status: http.StatusBadGateway, Code: wire.CodeDecodeStreamFailed, Message: msg, Leg: "decode"}
}

// streamEndsWithDone reports whether the route's SSE stream is terminated by
// "data: [DONE]": OpenAI chat/completions and SGLang /generate. /v1/messages (Anthropic:
// message_stop) and /v1/responses (response.completed) streams end with a named event and
// then EOF, which is a clean end, not a broken stream.
func streamEndsWithDone(r handoff.Route) bool {
	return r != handoff.RouteMessages && r != handoff.RouteResponses
}

// writeMerged frames chunk into events and writes each, merging prefill logprobs.
func (d *Dispatcher) writeMerged(w io.Writer, split *handoff.EventSplitter, chunk, lp []byte) error {
	if err := split.Write(chunk); err != nil {
		return err
	}
	for {
		ev, ok := split.Next()
		if !ok {
			return nil
		}
		out, _ := handoff.MergeLogprobsEvent(lp, ev)
		if _, err := w.Write(out); err != nil {
			return err
		}
	}
}

// relayBody answers a non-streaming request. The decode body is read completely first,
// without waiting for the prefill (its answer is the KV's proof), so a decode that dies
// mid-body or answers a body labelled JSON that does not parse is an attempt error
// (decode_read_failed, decode_invalid_response) instead of a truncated 200. With logprobs
// the prefill body is awaited and merged, and the body sent as application/json (seed
// "Non-streaming HTTP responses keep a JSON content type"); otherwise the decode's headers
// and bytes are relayed as they are.
func (d *Dispatcher) relayBody(w http.ResponseWriter, o *open) (committed bool, err error) {
	buf, err := readPooled(o.decodeResp.Body, d.cfg.MaxPayloadSize, contentLength(o.decodeResp.Header))
	o.dtimer.stop()    // --decode-timeout-secs bounds the whole answer, head and body
	defer putBody(buf) // after the Write below: nothing keeps the bytes
	body := buf.Bytes()
	if err != nil {
		return false, d.attemptError(o.reqCtx, o, func() *legFault {
			return &legFault{w: o.decode, cause: err, e: &errs.Error{Status: http.StatusBadGateway, Code: "decode_read_failed",
				Leg: "decode", Message: "Failed to read decode response from worker " + o.decode.ID + ": " + transportCause(err)}}
		})
	}
	if e := checkJSONBody(o.decodeResp.Header, body); e != nil {
		e.Message = "decode worker " + o.decode.ID + " answered " + strconv.Itoa(len(body)) + " bytes that are not valid JSON"
		d.log.WarnContext(o.reqCtx, "decode answered a malformed JSON body", "decode", o.decode.DisplayURL(), "decode_id", o.decode.ID, "bytes", len(body))
		return false, d.attemptError(o.reqCtx, o, func() *legFault {
			return &legFault{w: o.decode, status: http.StatusBadGateway, cause: errMalformed, e: e}
		})
	}
	if u, ok := handoff.PrefillUsage(o.route, body); ok && u.HasCached && o.prefill != nil { // the decode's own usage; none for decode-only
		d.recomputes.Note(o.reqCtx, d.log, d.metrics, o.prefill, o.decode, int(u.Prompt), int(u.Cached))
	}
	if o.keep || handoff.NeedsPrefillUsage(o.route, body) {
		if f := o.awaitPrefill(); f != nil {
			return false, d.attemptError(o.reqCtx, o, func() *legFault { return f })
		}
	}
	if o.usage != nil {
		body, _ = handoff.RewriteUsage(o.route, body, *o.usage)
	}
	d.record(o.decode, o.decodeResp.Status, nil)
	d.metrics.ObserveTTFT(o.model, o.runtime, time.Since(o.start))
	h := w.Header()
	if o.prefillLogprobs != nil {
		body, _ = handoff.MergeLogprobs(o.prefillLogprobs, body)
	}
	if o.forceJSON {
		h.Set("Content-Type", "application/json")
	} else {
		copyResponseHeaders(h, o.decodeResp.Header)
	}
	h.Set(wire.HeaderRoutedWorker, o.decode.ID)
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(o.decodeResp.Status)
	_, _ = w.Write(body)
	return true, nil
}

// prefillUsageInto rewrites the usage of the decode stream's events in span (complete
// lines) with the prefill's view of the prompt: the decode engine counts the whole prompt as
// cached, because its KV came through the handoff. The first event that carries a cached
// count waits for the prefill's numbers (it ended already in practice: the decode's output
// needed its KV); a prefill that reported none leaves the events as they are.
//
// The decode's own usage in the stream (there only when the client asked for it, e.g.
// stream_options.include_usage: the gateway does not add it, so the client's stream stays
// as the engine sent it) is read first for a silent recompute, once per answer.
func (d *Dispatcher) prefillUsageInto(o *open, span []byte) []byte {
	return handoff.RewriteDataLines(span, func(p []byte) ([]byte, bool) {
		if !o.recomputeRead && o.prefill != nil && handoff.MayCarryUsage(p) { // decode-only: no handoff, no recompute
			if u, ok := handoff.PrefillUsage(o.route, p); ok && u.HasCached {
				o.recomputeRead = true
				d.recomputes.Note(o.reqCtx, d.log, d.metrics, o.prefill, o.decode, int(u.Prompt), int(u.Cached))
			}
		}
		if !handoff.NeedsPrefillUsage(o.route, p) {
			return nil, false
		}
		if o.awaitPrefill() != nil || o.usage == nil {
			return nil, false
		}
		return handoff.RewriteUsage(o.route, p, *o.usage)
	})
}
