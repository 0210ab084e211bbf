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
)

// relayBufSize is the read size of the streaming relay (bytes). Each read is written and
// flushed at once: no decode chunk waits in the gateway (style.md pattern 8). An engine
// flushes one SSE event per chunk and a read returns at most one chunk, so a token event
// (~200 B, a few KB with logprobs) passes in one read; a larger event is relayed in
// several flushed pieces. The buffer is held for the stream's lifetime (pooled,
// bufpool.go), so this size is most of the gateway's memory per open stream.
const relayBufSize = 8 << 10

// relayStream streams the decode SSE body to the client as it arrives (seed "HTTP streams
// start on the response heads"). It stops after the line-anchored [DONE] event. A decode
// stream that breaks, or that ends without [DONE] on a route terminated by it
// (streamEndsWithDone), gets an error event followed by [DONE], never a silent truncation.
// With prefill logprobs, each event carrying meta_info.input_token_logprobs is rewritten
// with the prefill's in front.
func (d *Dispatcher) relayStream(w http.ResponseWriter, o *open) {
	h := w.Header()
	copyResponseHeaders(h, o.decodeResp.Header)
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set(wire.HeaderRoutedWorker, o.decode.URL)
	w.WriteHeader(o.decodeResp.Status)
	rc := http.NewResponseController(w)
	_ = rc.Flush()

	body := o.decodeResp.Body
	bp := getRelayBuf()
	defer putRelayBuf(bp)
	buf := *bp
	var scan handoff.DoneScanner
	var split *handoff.EventSplitter
	if o.prefillLogprobs != nil {
		split = &handoff.EventSplitter{}
	}
	fw := d.watchFirstByte(o)
	defer fw.seen()
	first := true
	for {
		n, rerr := body.Read(buf)
		if n > 0 {
			if first {
				first = false
				fw.seen()
				d.metrics.ObserveTTFT(o.model, o.runtime, time.Since(o.start))
			}
			chunk := buf[:n]
			end, done := scan.Feed(chunk)
			chunk = chunk[:end]
			var werr error
			if split != nil {
				werr = d.writeMerged(w, split, chunk, o.prefillLogprobs)
			} else {
				_, werr = w.Write(chunk)
			}
			if werr == nil {
				werr = rc.Flush()
			}
			if werr != nil {
				o.cancel() // client gone: abort both legs
				return
			}
			if done {
				d.legEnded(o, o.decode, o.decodeResp.Status, nil)
				return
			}
		}
		if rerr != nil {
			if split != nil {
				if rest := split.Flush(); len(rest) > 0 {
					_, _ = w.Write(rest)
				}
			}
			if errors.Is(rerr, io.EOF) && !streamEndsWithDone(o.route) {
				d.legEnded(o, o.decode, o.decodeResp.Status, nil)
				_ = rc.Flush()
				return // an Anthropic or Responses stream ends with its own terminal event
			}
			e := d.streamBroke(o, fw, rerr)
			if e.Status == 499 {
				return // the client is gone: nobody reads an error event
			}
			_, _ = w.Write(handoff.StreamError(e))
			_ = rc.Flush()
			return
		}
	}
}

// streamBroke classifies a decode stream that ended without its terminal event, records the
// decode worker's outcome and returns the in-stream error to send: the first-byte bound
// (504 decode_first_byte_timeout, a decode failure), the request timeout (504
// request_timeout, no outcome), a gone client (499, nothing sent), else a broken stream
// (502 decode_stream_failed, a decode failure: a decode that dies mid-stream counts
// against its breaker).
func (d *Dispatcher) streamBroke(o *open, fw *firstByteWatch, rerr error) *errs.Error {
	if !fw.seen() {
		d.record(o.decode, 0, errFirstByte)
		d.log.Warn("decode stream sent nothing within the first-byte timeout", "decode", o.decode.URL)
		return d.firstByteError()
	}
	if o.ctx != nil && o.ctx.Err() != nil {
		return contextError(o.ctx, "while streaming the decode output")
	}
	msg := "decode stream ended before [DONE]"
	if !errors.Is(rerr, io.EOF) {
		msg = "decode stream failed: " + rerr.Error()
	} else {
		rerr = io.ErrUnexpectedEOF
	}
	d.record(o.decode, 0, rerr)
	d.log.Warn("decode stream broke", "decode", o.decode.URL, "err", rerr)
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

// relayBody answers a non-streaming request. The decode body is read completely first, so a
// decode that dies mid-body becomes a clean 502 instead of a truncated 200, and a body
// labelled JSON that does not parse becomes 502 decode_invalid_response; both count as a
// decode failure. Without logprobs
// the decode's headers and bytes are relayed as they are (Content-Type from the engine);
// with logprobs the merged body is sent as application/json (seed "Non-streaming HTTP
// responses keep a JSON content type").
func (d *Dispatcher) relayBody(w http.ResponseWriter, o *open) error {
	buf, err := readPooled(o.decodeResp.Body, d.cfg.MaxPayloadSize, contentLength(o.decodeResp.Header))
	defer putBody(buf) // after the Write below: nothing keeps the bytes
	body := buf.Bytes()
	if err != nil {
		if o.ctx != nil && o.ctx.Err() != nil {
			return contextError(o.ctx, "reading the decode response")
		}
		d.record(o.decode, 0, err)
		return &errs.Error{Status: http.StatusBadGateway, Code: "decode_read_failed", Leg: "decode",
			Retryable: false, Message: "Failed to read decode response: " + err.Error()}
	}
	if e := checkJSONBody(o.decodeResp.Header, body); e != nil {
		d.record(o.decode, 0, errMalformed)
		d.log.Warn("decode answered a malformed JSON body", "decode", o.decode.URL, "bytes", len(body))
		return e
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
	h.Set(wire.HeaderRoutedWorker, o.decode.URL)
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(o.decodeResp.Status)
	_, _ = w.Write(body)
	return nil
}
