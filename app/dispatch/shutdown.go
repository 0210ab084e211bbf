package dispatch

import (
	"context"
	"errors"
	"net/http"

	"github.com/smg-go/smg/domain/errs"
	"github.com/smg-go/smg/domain/wire"
)

// ErrShutdown is the cancel cause the gateway's server gives every in-flight request's
// context when --shutdown-grace-period-secs ends (context.WithCancelCause on the listener's
// base context). A request whose context ends with this cause is answered 503
// server_shutting_down (shutdownError) instead of a client-gone 499: a non-streaming request
// gets the error body, an open stream an SSE error event and data: [DONE] (relayStream).
var ErrShutdown = errors.New("gateway shutting down: grace period over")

// shutdownCut reports whether ctx ended because the shutdown grace period ran out.
func shutdownCut(ctx context.Context) bool {
	return errors.Is(context.Cause(ctx), ErrShutdown)
}

// shutdownError is the answer to a request cut at the shutdown grace deadline; what says
// where the request was ("while streaming the decode output"). Not retryable: the context is
// gone, and no new attempt may start on a gateway that is stopping.
func shutdownError(what string) *errs.Error {
	return &errs.Error{Status: http.StatusServiceUnavailable, Code: wire.CodeServerShuttingDown,
		Message: "the gateway is shutting down (grace period over) " + what}
}
