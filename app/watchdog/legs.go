package watchdog

import (
	"context"
	"fmt"
	"sync/atomic"

	"github.com/smg-go/smg/domain/errs"
	"github.com/smg-go/smg/domain/progress"
	"github.com/smg-go/smg/domain/worker"
)

// stallError is how a stranded leg of a confirmed stalled worker ends: it wraps
// errs.ErrUnresponsive, so the dispatcher and the pipeline charge it to the worker and
// retry elsewhere as they do when a leg deadline passes.
func stallError(l *worker.Live) error {
	return fmt.Errorf("worker %s made no progress within its stall bound and failed its canary (progress watchdog): %w",
		l.ID, errs.ErrUnresponsive)
}

// leg is one tracked leg: progress and end are idempotent after the end. It lives inside
// the wrapper of the leg's stream or body (one allocation per leg), and the worker's record
// keeps it for the cut: no closure, and the stall error is built only when a cut happens.
type leg struct {
	s     *watched
	id    progress.LegID
	w     *Watchdog
	l     *worker.Live
	ended atomic.Bool
	// stalled is set when the watchdog cut the leg; err (the stall error) is written
	// before it and read only after it was seen set.
	stalled atomic.Bool
	err     error
	// cancel cancels the leg's context with the stall error when the leg is cut.
	cancel context.CancelCauseFunc
	// gen and rid, for a gRPC leg, send the engine's Abort RPC for request id rid on a cut.
	gen *generator
	rid string
}

// begin tracks g, a leg to l whose context cancel ends it; g.gen and g.rid are set by the
// caller beforehand for a gRPC leg. The watchdog cuts it (kill, at most once, never after
// end) when it confirms l stalled.
func (w *Watchdog) begin(g *leg, l *worker.Live, cancel context.CancelCauseFunc) {
	s := w.watchedOf(l)
	g.s, g.w, g.l, g.cancel = s, w, l, cancel
	g.id = s.tr.Begin(w.now())
	s.mu.Lock()
	s.kills[g.id] = g
	s.mu.Unlock()
}

// kill cuts the leg: a gRPC leg gets its Abort RPC, then its context is cancelled with the
// stall error.
func (g *leg) kill() {
	g.err = stallError(g.l)
	g.stalled.Store(true)
	if g.gen != nil {
		g.gen.abort(g.l, g.rid)
	}
	g.cancel(g.err)
}

// stall is the stall error of a leg seen stalled.
func (g *leg) stall() error { return g.err }

// progress records progress; delivered marks output that may reach the client.
func (g *leg) progress(delivered bool) {
	if !g.ended.Load() {
		g.s.tr.Progress(g.id, g.w.now(), delivered)
	}
}

// end stops tracking the leg; answered reports an answer (progress of the worker).
func (g *leg) end(answered bool) {
	if !g.ended.CompareAndSwap(false, true) {
		return
	}
	g.s.tr.End(g.id, g.w.now(), answered)
	g.s.mu.Lock()
	delete(g.s.kills, g.id)
	g.s.mu.Unlock()
}
