package pipeline

import (
	"errors"
	"net/http"

	"github.com/smg-go/smg/domain/errs"
	"github.com/smg-go/smg/domain/handoff"
	"github.com/smg-go/smg/domain/wire"
)

// streamError is the in-stream error of an attempt that failed after its SSE head was
// sent: the attempt's gateway error, with a decode leg's failure reported as 502
// decode_stream_failed (as the HTTP relay reports a decode stream that broke mid-way).
// nil for a client that went away (499: nobody reads the stream).
func streamError(err error) *errs.Error {
	var e *errs.Error
	if !errors.As(err, &e) {
		return &errs.Error{Status: http.StatusBadGateway, Code: wire.CodeDecodeStreamFailed, Leg: "decode",
			Message: "decode stream failed: " + err.Error()}
	}
	if e.Status == 499 {
		return nil
	}
	if e.Leg == "decode" && e.Status != http.StatusGatewayTimeout {
		return &errs.Error{Status: http.StatusBadGateway, Code: wire.CodeDecodeStreamFailed, Leg: "decode", Message: e.Message}
	}
	return e
}

// fail ends a committed stream with err in the route's shape: OpenAI chat/completions and
// SGLang /generate get `data: {"error":{...}}` then `data: [DONE]` (handoff.StreamError, the
// HTTP path's event); /v1/messages an Anthropic `event: error` (api_error); /v1/responses
// an `error` event then response.failed. Nothing is written to an uncommitted or
// non-streaming response (the dispatcher answers those with an error body).
func (r *responder) fail(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.committed || !r.j.stream {
		return
	}
	e := streamError(err)
	if e == nil {
		return
	}
	switch {
	case r.msg != nil:
		typ := "api_error"
		if e.Status == http.StatusServiceUnavailable || e.Status == http.StatusTooManyRequests {
			typ = "overloaded_error"
		}
		r.write(r.msg.Error(typ, e.Message))
	case r.resp != nil:
		r.write(r.resp.Error(e.Code, e.Message))
	default:
		r.write(handoff.StreamError(e))
	}
	r.flush()
}
