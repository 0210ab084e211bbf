// Package errs is the gateway's error catalogue. The domain and the use cases return *Error
// values; exactly one place at the HTTP edge turns them into a response with the seed's body
// shape {"error":{"type","code","message","param":null}} and the X-SMG-Error-Code header
// (seed "Error Codes"; smg-spec.md §6.1).
package errs

import (
	"errors"
	"fmt"

	"github.com/smg-go/smg/domain/wire"
)

// Error is a client-visible gateway error: an HTTP status (an int, so the domain needs no
// net/http), a stable code, and a human message.
type Error struct {
	// Status is the HTTP status to answer with.
	Status int
	// Code is the stable machine-readable code (wire.Code*).
	Code string
	// Message is the human-readable explanation.
	Message string
	// Retryable marks whether the gateway itself may retry the attempt that produced it
	// (smg-spec.md §6.7). Sheds are never retryable.
	Retryable bool
	// RetryAfterSecs, when > 0, is sent as a Retry-After header (sheds).
	RetryAfterSecs int
	// Leg is "prefill", "decode" or "" when the error is not tied to one leg.
	Leg string
}

// Error implements error: "<code>: <message>".
func (e *Error) Error() string { return e.Code + ": " + e.Message }

// New builds an *Error with a formatted message.
func New(status int, code, format string, args ...any) *Error {
	return &Error{Status: status, Code: code, Message: fmt.Sprintf(format, args...)}
}

// As returns the *Error inside err, if any. It allocates nothing (errors.As with a
// pointer target does); it runs on every request, with a nil err on success.
func As(err error) (*Error, bool) {
	return errors.AsType[*Error](err)
}

// NoAvailableWorkers is the 503 for a leg without an available worker (seed "Error Codes":
// over HTTP the message names the leg). It is not retryable: when no worker of a leg is
// selectable, waiting out backoffs only delays the answer.
func NoAvailableWorkers(leg string) *Error {
	return &Error{Status: 503, Code: wire.CodeNoAvailableWorkers, Leg: leg,
		Message: fmt.Sprintf("No available %s workers (all unhealthy or circuits open). Please check if %s servers are configured and healthy.", leg, leg)}
}

// ModelNotFound is the 404 for a model no registered worker serves (smg-spec.md §6.1).
func ModelNotFound(model string) *Error {
	return &Error{Status: 404, Code: wire.CodeModelNotFound,
		Message: fmt.Sprintf("No worker available for model '%s'", model)}
}

// BadRequest is a 400 with code invalid_request.
func BadRequest(format string, args ...any) *Error {
	return New(400, wire.CodeInvalidRequest, format, args...)
}

// Type is the error body's "type" for status, in OpenAI's vocabulary so OpenAI clients and
// SDKs read it as they read OpenAI's own errors: authentication_error (401),
// permission_error (403), rate_limit_error (429), server_error (5xx except 501), and
// invalid_request_error for every other status (the request's own fault, or a feature PD
// does not serve: 501).
func Type(status int) string {
	switch {
	case status == 401:
		return "authentication_error"
	case status == 403:
		return "permission_error"
	case status == 429:
		return "rate_limit_error"
	case status >= 500 && status != 501:
		return "server_error"
	}
	return "invalid_request_error"
}

// ErrUnresponsive marks a leg outcome whose worker did not answer in time: the gateway's
// leg deadline passed (--prefill-timeout-secs, --first-byte-timeout-secs,
// --decode-timeout-secs), or the peer engine reported that the KV handoff timed out
// waiting for this worker (SGLang's KVPoll timeouts, engines.md §2.4). Circuit breakers
// count such outcomes against a lower threshold (--cb-timeout-failure-threshold): each one
// costs a client a whole deadline.
var ErrUnresponsive = errors.New("worker unresponsive")
