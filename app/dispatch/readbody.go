package dispatch

import (
	"errors"
	"net"
	"net/http"
	"time"

	"github.com/smg-go/smg/domain/errs"
	"github.com/smg-go/smg/domain/wire"
)

// readClientBody reads a data-plane request body, bounded in size and time:
//   - a Content-Length over limit is refused with 413 payload_too_large before a byte is
//     read (the connection is closed after the answer, so the rest is never received);
//   - a body that grows past limit (chunked, or longer than announced) is cut at limit+1
//     bytes with the same 413;
//   - the whole body must arrive within timeout (0: no deadline) of the call, else 408
//     body_read_timeout and the connection is closed; the deadline is lifted once the body
//     is read, so it never bounds a long streamed answer (the read deadline is set through
//     http.ResponseController, which reaches the connection through wrappers that Unwrap);
//   - memory follows the bytes received, not the announced size (readAllSized);
//   - with a budget (--max-inflight-body-mb), every buffer is reserved before it is
//     allocated: the first before a byte is read, each growth before it is made, so the
//     reservation follows the buffer and a client that announces much and sends little
//     holds little; a budget that stays full answers 503 worker_overload_protection_shed
//     with Retry-After and the connection is closed (the rest is never read). The hold is
//     the caller's to release when the request ends (also on error: it is idempotent).
//
// Errors are *errs.Error for WriteError.
func readClientBody(w http.ResponseWriter, r *http.Request, limit int64, timeout time.Duration, hold *bodyHold) ([]byte, error) {
	if r.ContentLength > limit {
		w.Header().Set("Connection", "close")
		return nil, tooLarge(limit)
	}
	hint := min(r.ContentLength, limit)
	var grow func(int64) error
	if hold != nil && hold.bb != nil {
		if err := hold.reserve(readStart(hint)); err != nil {
			w.Header().Set("Connection", "close")
			return nil, err
		}
		grow = hold.reserve
	}
	rc := http.NewResponseController(w)
	deadline := timeout > 0 && rc.SetReadDeadline(time.Now().Add(timeout)) == nil
	b, err := readAllReserved(http.MaxBytesReader(w, r.Body, limit), hint, grow)
	if err == nil {
		if deadline {
			_ = rc.SetReadDeadline(time.Time{})
		}
		return b, nil
	}
	if e, ok := errs.As(err); ok { // the budget refused a chunked body's growth
		w.Header().Set("Connection", "close")
		return nil, e
	}
	// On failure the deadline stays: the server's drain of an unread rest fails at once and
	// the connection is closed instead of waiting on a silent client.
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		w.Header().Set("Connection", "close")
		return nil, tooLarge(limit)
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		w.Header().Set("Connection", "close")
		return nil, errs.New(http.StatusRequestTimeout, wire.CodeBodyReadTimeout,
			"request body not received within --body-read-timeout-secs (%gs)", timeout.Seconds())
	}
	return nil, errs.BadRequest("failed to read request body: %v", err)
}

func tooLarge(limit int64) *errs.Error {
	return errs.New(http.StatusRequestEntityTooLarge, wire.CodePayloadTooLarge,
		"request body exceeds --max-payload-size (%d bytes)", limit)
}
