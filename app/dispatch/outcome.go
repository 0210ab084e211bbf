package dispatch

import (
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/smg-go/smg/domain/errs"
	"github.com/smg-go/smg/domain/jsonbody"
	"github.com/smg-go/smg/domain/wire"
	"github.com/smg-go/smg/domain/worker"
)

// legEnded records the outcome of a leg whose 2xx head arrived, once its body ended:
// status when the body was read to its end (err nil), a failure when the body broke while
// the gateway still wanted it. A leg the gateway cancelled itself — the other leg failed,
// the client left, the request timed out — records nothing (seed "Failures, Cancellation,
// and Streaming": the leg SMG drops records no outcome on its worker).
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

// checkJSONBody returns 502 decode_invalid_response when a decode answer whose Content-Type
// says JSON (or is absent) is not valid JSON — a truncated or garbled engine answer must not
// reach the client as a 200 — else nil. Other content types are relayed unchecked. The
// check is jsonbody.Valid (encoding/json.Valid's acceptance, about 3× faster, no
// allocation): it runs on every non-streaming answer and every prefill answer.
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

// isEventStream reports whether an engine answer is an SSE stream.
func isEventStream(h http.Header) bool {
	return strings.HasPrefix(strings.ToLower(h.Get("Content-Type")), "text/event-stream")
}

// errMalformed is the outcome error recorded for a leg whose 2xx body (or stream event) is
// not valid JSON, with status 502 (the gateway's answer): the engine answered, so
// smg_worker_errors_total counts a backend_error, not a connection_error.
var errMalformed = errors.New("malformed engine response")

// prefillInvalid is the 502 for a 2xx prefill answer that is not a valid engine response.
func prefillInvalid(p *worker.Live, err error) *errs.Error {
	return &errs.Error{Status: http.StatusBadGateway, Code: wire.CodePrefillInvalidResponse, Leg: "prefill", Retryable: true,
		Message: "prefill worker " + p.ID + " answered a body that is not a valid engine response (" + err.Error() + ")"}
}

// prefillReadFailed is the 502 for a prefill body that broke or ended early.
func prefillReadFailed(p *worker.Live, err error) *errs.Error {
	return &errs.Error{Status: http.StatusBadGateway, Code: wire.CodePrefillReadFailed, Leg: "prefill", Retryable: true,
		Message: "Failed to read prefill response from worker " + p.ID + ": " + err.Error()}
}

// transportCause is a transport error without the request URL (*url.Error's Op and URL):
// client-facing messages name workers by id, never by address.
func transportCause(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	return err.Error()
}
