// Package memory holds the in-memory implementations of the gateway's shared-state ports.
// They are the default when no --redis-url is set: one gateway process, nothing shared.
package memory

import (
	"fmt"
	"slices"
	"sync"

	"go.uber.org/fx"

	"github.com/smg-go/smg/domain/worker"
	"github.com/smg-go/smg/ports"
)

// Workers is the in-memory ports.WorkerStore. Reads (List, ByRole, Get, GetByURL) take a
// read lock; ByRole returns a copy-on-write snapshot, so the per-request path allocates
// nothing. A role's list is copied only when a change would alter elements a reader may
// hold: an Add appends in place, and a Replace or Remove edits in place while no reader has
// taken the list since it was last copied, so registering a fleet without traffic costs
// O(1) allocations per worker instead of a copy of the role's list. Changes are serialized and subscribers are called synchronously, in change order,
// after the store's lock is released: a subscriber may read the store but must not change
// it from inside the callback (that would deadlock); hand such work to a goroutine.
type Workers struct {
	// notify serializes changes with their notifications, so subscribers see events in the
	// order the changes happened.
	notify sync.Mutex

	mu     sync.RWMutex
	byID   map[string]*worker.Live
	byURL  map[string]*worker.Live
	order  []*worker.Live // registration order; never handed out (List copies it)
	byRole map[worker.Role]*roleList
	subs   []func(ports.WorkerEvent)
}

var _ ports.WorkerStore = (*Workers)(nil)

// NewWorkers returns an empty store.
func NewWorkers() *Workers {
	return &Workers{
		byID:   map[string]*worker.Live{},
		byURL:  map[string]*worker.Live{},
		byRole: map[worker.Role]*roleList{},
	}
}

// Module provides the in-memory store as ports.WorkerStore (and as *Workers).
func Module() fx.Option {
	return fx.Module("store.memory",
		fx.Provide(
			NewWorkers,
			func(w *Workers) ports.WorkerStore { return w },
		),
	)
}

// Add registers w. It fails with an error wrapping ports.ErrDuplicateURL when a worker with
// the same URL is registered, and with a plain error when w is nil, has no ID, or its ID is
// taken.
func (s *Workers) Add(w *worker.Live) error {
	if w == nil || w.ID == "" {
		return fmt.Errorf("memory store: worker without id")
	}
	s.notify.Lock()
	defer s.notify.Unlock()

	s.mu.Lock()
	if old, ok := s.byURL[w.URL]; ok {
		s.mu.Unlock()
		return fmt.Errorf("%w: %s (id %s)", ports.ErrDuplicateURL, w.URL, old.ID)
	}
	if _, ok := s.byID[w.ID]; ok {
		s.mu.Unlock()
		return fmt.Errorf("memory store: worker id %s already registered", w.ID)
	}
	s.byID[w.ID] = w
	s.byURL[w.URL] = w
	s.order = append(s.order, w)
	s.role(w.Role).add(w)
	subs := s.subs
	s.mu.Unlock()

	emit(subs, ports.WorkerEvent{Kind: ports.EventAdded, Worker: w})
	return nil
}

// Remove unregisters the worker with id and returns it; ports.ErrNotFound if unknown.
func (s *Workers) Remove(id string) (*worker.Live, error) {
	s.notify.Lock()
	defer s.notify.Unlock()

	s.mu.Lock()
	w, ok := s.byID[id]
	if !ok {
		s.mu.Unlock()
		return nil, ports.ErrNotFound
	}
	delete(s.byID, id)
	delete(s.byURL, w.URL)
	if i := slices.Index(s.order, w); i >= 0 {
		s.order = slices.Delete(s.order, i, i+1)
	}
	s.role(w.Role).remove(w)
	subs := s.subs
	s.mu.Unlock()

	emit(subs, ports.WorkerEvent{Kind: ports.EventRemoved, Worker: w})
	return w, nil
}

// Replace swaps the registered worker old for nw in one step, keeping its place in
// registration order, so readers never see the worker missing. nw must have old's ID and
// URL. Subscribers see "removed" (old) then "added" (nw). Errors: ports.ErrNotFound when old
// is not the registered worker for its ID; a plain error when the ID or URL differ.
func (s *Workers) Replace(old, nw *worker.Live) error {
	if old == nil || nw == nil || old.ID != nw.ID || old.URL != nw.URL {
		return fmt.Errorf("memory store: replace needs the same worker id and url")
	}
	s.notify.Lock()
	defer s.notify.Unlock()

	s.mu.Lock()
	if s.byID[old.ID] != old {
		s.mu.Unlock()
		return ports.ErrNotFound
	}
	s.byID[nw.ID] = nw
	s.byURL[nw.URL] = nw
	if i := slices.Index(s.order, old); i >= 0 {
		s.order[i] = nw
	}
	if nw.Role == old.Role {
		s.role(old.Role).replace(old, nw)
	} else {
		s.rebuildRole(old.Role)
		s.rebuildRole(nw.Role)
	}
	subs := s.subs
	s.mu.Unlock()

	emit(subs, ports.WorkerEvent{Kind: ports.EventRemoved, Worker: old})
	emit(subs, ports.WorkerEvent{Kind: ports.EventAdded, Worker: nw})
	return nil
}

// Get returns the worker with id; ports.ErrNotFound if unknown.
func (s *Workers) Get(id string) (*worker.Live, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if w, ok := s.byID[id]; ok {
		return w, nil
	}
	return nil, ports.ErrNotFound
}

// GetByURL returns the worker registered at url (exact string match); ports.ErrNotFound if
// unknown.
func (s *Workers) GetByURL(url string) (*worker.Live, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if w, ok := s.byURL[url]; ok {
		return w, nil
	}
	return nil, ports.ErrNotFound
}

// List returns every worker in registration order, as a fresh slice the caller owns.
func (s *Workers) List() []*worker.Live {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]*worker.Live, len(s.order))
	copy(out, s.order)
	return out
}

// ByRole returns the workers of role r in registration order. The slice is a shared snapshot
// that is replaced, never modified, on change: callers must not modify it.
func (s *Workers) ByRole(r worker.Role) []*worker.Live {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.byRole[r].snapshot()
}

// Subscribe registers fn; it is called after every later Add, Remove and status change.
func (s *Workers) Subscribe(fn func(ports.WorkerEvent)) {
	if fn == nil {
		return
	}
	s.notify.Lock()
	defer s.notify.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	subs := make([]func(ports.WorkerEvent), len(s.subs), len(s.subs)+1)
	copy(subs, s.subs)
	s.subs = append(subs, fn)
}

// SetStatus sets l's status and, when it changed and l is still registered, notifies
// subscribers with a "status" event. A worker that is no longer registered gets the new
// status without an event.
func (s *Workers) SetStatus(l *worker.Live, st worker.Status) {
	if l == nil {
		return
	}
	s.notify.Lock()
	defer s.notify.Unlock()
	if l.Status() == st {
		return
	}
	l.SetStatus(st)
	s.mu.RLock()
	registered := s.byID[l.ID] == l
	subs := s.subs
	s.mu.RUnlock()
	if registered {
		emit(subs, ports.WorkerEvent{Kind: ports.EventStatus, Worker: l})
	}
}

// role returns the list of role r, made on first use. Callers hold s.mu for writing.
func (s *Workers) role(r worker.Role) *roleList {
	l := s.byRole[r]
	if l == nil {
		l = &roleList{}
		s.byRole[r] = l
	}
	return l
}

// rebuildRole replaces the list of role r by a fresh one read from the registration order.
// Callers hold s.mu for writing.
func (s *Workers) rebuildRole(r worker.Role) {
	var list []*worker.Live
	for _, x := range s.order {
		if x.Role == r {
			list = append(list, x)
		}
	}
	s.byRole[r] = &roleList{list: list}
}

func emit(subs []func(ports.WorkerEvent), ev ports.WorkerEvent) {
	for _, fn := range subs {
		fn(ev)
	}
}
