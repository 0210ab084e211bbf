package memory

import (
	"slices"
	"sync/atomic"

	"github.com/smg-go/smg/domain/worker"
)

// roleList is one role's workers in registration order, handed to readers as snapshots.
// Its changes happen under Workers.mu held for writing; snapshot runs under the read lock.
//
// Invariant: while shared is false, no reader holds a slice of list's backing array, so a
// change may edit it in place. Snapshots are clipped to their length, and elements below a
// snapshot's length are never written while shared is true: an add writes past every
// snapshot's end (in place, or into a new array when full), and a remove or replace copies
// the list to a new array first and clears shared.
type roleList struct {
	list   []*worker.Live
	shared atomic.Bool // a snapshot of list's backing array was handed out
}

// snapshot returns the list for a reader; a nil l has none. The slice's capacity is its
// length, so a caller's append copies instead of writing into the shared array.
func (l *roleList) snapshot() []*worker.Live {
	if l == nil || len(l.list) == 0 {
		return nil
	}
	if !l.shared.Load() { // read first: the flag's cache line stays shared among readers
		l.shared.Store(true)
	}
	return l.list[:len(l.list):len(l.list)]
}

// add appends w. A full array is replaced by a larger one that no reader holds yet.
func (l *roleList) add(w *worker.Live) {
	grows := len(l.list) == cap(l.list)
	l.list = append(l.list, w)
	if grows {
		l.shared.Store(false)
	}
}

// own makes list safe to edit in place: a copy when a reader may hold the current array.
func (l *roleList) own() {
	if l.shared.Load() {
		l.list = slices.Clone(l.list)
		l.shared.Store(false)
	}
}

// remove drops w, keeping the order of the rest.
func (l *roleList) remove(w *worker.Live) {
	i := slices.Index(l.list, w)
	if i < 0 {
		return
	}
	l.own()
	l.list = slices.Delete(l.list, i, i+1)
}

// replace puts nw in old's place.
func (l *roleList) replace(old, nw *worker.Live) {
	i := slices.Index(l.list, old)
	if i < 0 {
		return
	}
	l.own()
	l.list[i] = nw
}
