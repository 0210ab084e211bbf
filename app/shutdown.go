package app

import (
	"context"
	"fmt"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/smg-go/smg/app/dispatch"
	"github.com/smg-go/smg/ports"
)

// cutFlush bounds how long the server waits, once the grace period is over and every
// in-flight request's context was cancelled with dispatch.ErrShutdown, for the handlers to
// write their 503 body or SSE error event and return before the connections are closed.
// Cancelled legs end within milliseconds; the bound is for a handler that does not.
const cutFlush = 2 * time.Second

// ShutdownCutError is Stop's error when the shutdown grace period
// (--shutdown-grace-period-secs) ended while requests were still being served: they were cut
// (non-streaming ones answered 503 server_shutting_down, open streams ended with an SSE
// error event and data: [DONE]). `smg launch` exits 3 on it, 0 after a clean drain.
type ShutdownCutError struct {
	// Requests is how many requests were in flight at the grace deadline.
	Requests int64
	// Grace is the grace period that ended.
	Grace time.Duration
}

func (e *ShutdownCutError) Error() string {
	return fmt.Sprintf("shutdown grace period (--shutdown-grace-period-secs %s) ended with %d requests in flight: they were cut with 503 server_shutting_down",
		e.Grace, e.Requests)
}

// drainer is the main listener's shutdown state: whether the drain started (readiness), how
// many requests are being served, and the base context of every request, cancelled with
// dispatch.ErrShutdown at the grace deadline.
type drainer struct {
	draining atomic.Bool
	active   atomic.Int64
	base     context.Context
	cut      context.CancelCauseFunc
}

func newDrainer() *drainer {
	base, cut := context.WithCancelCause(context.Background())
	return &drainer{base: base, cut: cut}
}

var _ ports.DrainState = (*drainer)(nil)

// Draining reports whether the shutdown drain started (ports.DrainState).
func (d *drainer) Draining() bool { return d.draining.Load() }

// track counts h's requests while they are served.
func (d *drainer) track(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		d.active.Add(1)
		defer d.active.Add(-1)
		h.ServeHTTP(w, r)
	})
}

// cutAll cancels every request's context with dispatch.ErrShutdown and returns how many
// requests were being served at that moment.
func (d *drainer) cutAll() int64 {
	n := d.active.Load()
	d.cut(dispatch.ErrShutdown)
	return n
}

// waitIdle polls (every 10 ms) until no request is being served, at most max or until ctx
// ends, and returns how many still are.
func (d *drainer) waitIdle(ctx context.Context, max time.Duration) int64 {
	deadline := time.NewTimer(max)
	defer deadline.Stop()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		n := d.active.Load()
		if n == 0 {
			return 0
		}
		select {
		case <-tick.C:
		case <-deadline.C:
			return n
		case <-ctx.Done():
			return n
		}
	}
}

// sleepCtx waits for d or until ctx ends.
func sleepCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}
