package watchdog

import (
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

// leg is one tracked leg: progress and end are idempotent after the end.
type leg struct {
	s     *watched
	id    progress.LegID
	w     *Watchdog
	ended atomic.Bool
	// stalled is set when the watchdog cut the leg.
	stalled atomic.Bool
}

// begin tracks a leg to l; cut ends it when the watchdog confirms l stalled (called at
// most once, never after end).
func (w *Watchdog) begin(l *worker.Live, cut func()) *leg {
	s := w.watchedOf(l)
	g := &leg{s: s, w: w, id: s.tr.Begin(w.now())}
	s.mu.Lock()
	s.kills[g.id] = func() {
		g.stalled.Store(true)
		cut()
	}
	s.mu.Unlock()
	return g
}

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
