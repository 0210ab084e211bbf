package dispatch

import (
	"errors"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/smg-go/smg/domain/errs"
	"github.com/smg-go/smg/domain/jsonbody"
	"github.com/smg-go/smg/domain/wire"
	"github.com/smg-go/smg/domain/worker"
)

// legEnded records the outcome of a leg whose 2xx head arrived, once its body ended (issue
// #9): status when the body was read to its end (err nil), a failure when the body broke
// while the gateway still wanted it. A leg the gateway cancelled itself — the other leg
// failed, the client left, the request timed out — records nothing (seed "Failures,
// Cancellation, and Streaming": the leg SMG drops records no outcome on its worker).
func (d *Dispatcher) legEnded(o *open, w *worker.Live, status int, err error) {
	if err == nil {
		d.record(w, status, nil)
		return
	}
	if o.ctx != nil && o.ctx.Err() != nil {
		return
	}
	d.record(w, 0, err)
}

// firstByteWatch bounds the wait for a decode stream's first body byte after its head:
// SGLang and vLLM send a stream's head at once and its first token only once the KV
// arrived, so without this bound a lost handoff would hold the request until the engine's
// own bootstrap deadline (issue #9 item 3). Zero --first-byte-timeout-secs disables it.
type firstByteWatch struct {
	t     *time.Timer
	fired atomic.Bool
}

// watchFirstByte starts the bound for o's decode stream: when it passes, both legs are
// cancelled and fired reports true. Call seen at the first byte (and at the end).
func (d *Dispatcher) watchFirstByte(o *open) *firstByteWatch {
	fw := &firstByteWatch{}
	if d.cfg.FirstByteTimeout > 0 {
		fw.t = time.AfterFunc(d.cfg.FirstByteTimeout, func() {
			fw.fired.Store(true)
			o.cancel()
		})
	}
	return fw
}

// seen stops the bound; it reports false when the bound had already passed.
func (fw *firstByteWatch) seen() bool {
	if fw.t != nil {
		fw.t.Stop()
	}
	return !fw.fired.Load()
}

// firstByteError is the stream error sent when a decode stream produced no byte within
// --first-byte-timeout-secs.
func (d *Dispatcher) firstByteError() *errs.Error {
	return &errs.Error{Status: http.StatusGatewayTimeout, Code: wire.CodeDecodeFirstByteTimeout, Leg: "decode",
		Message: "decode worker sent no output within --first-byte-timeout-secs (" +
			strconv.FormatFloat(d.cfg.FirstByteTimeout.Seconds(), 'f', -1, 64) + "s)"}
}

// errFirstByte is the outcome error recorded for a decode stream that sent nothing within
// --first-byte-timeout-secs.
var errFirstByte = errors.New("no output within the first-byte timeout")

// checkJSONBody returns 502 decode_invalid_response when a decode answer whose Content-Type
// says JSON (or is absent) is not valid JSON — a truncated or garbled engine answer must not
// reach the client as a 200 — else nil. Other content types are relayed unchecked. The
// check is jsonbody.Valid (encoding/json.Valid's acceptance, about 3× faster, no
// allocation): it runs on every non-streaming answer and every vLLM prefill answer.
func checkJSONBody(h http.Header, body []byte) *errs.Error {
	ct := h.Get("Content-Type")
	if ct != "" && !strings.Contains(strings.ToLower(ct), "json") {
		return nil
	}
	if jsonbody.Valid(body) {
		return nil
	}
	return &errs.Error{Status: http.StatusBadGateway, Code: wire.CodeDecodeInvalidResponse, Leg: "decode",
		Message: "decode worker answered " + strconv.Itoa(len(body)) + " bytes that are not valid JSON"}
}

// errMalformed is the outcome error recorded for a leg whose 2xx body is not valid JSON.
var errMalformed = errors.New("malformed JSON body")
