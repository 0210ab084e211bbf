package memory

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/smg-go/smg/ports"
)

// Fleet is the in-process ports.FleetStore: registrations shared by every registry in the
// same process that is given the same *Fleet (tests; the gateway uses the Redis fleet when
// --redis-url is set and no fleet at all otherwise). Safe for concurrent use.
type Fleet struct {
	mu       sync.Mutex
	version  int64
	byID     map[string]ports.FleetRecord
	byURL    map[string]string
	watchers map[chan struct{}]struct{}
}

var _ ports.FleetStore = (*Fleet)(nil)

// NewFleet returns an empty fleet at version 0.
func NewFleet() *Fleet {
	return &Fleet{byID: map[string]ports.FleetRecord{}, byURL: map[string]string{},
		watchers: map[chan struct{}]struct{}{}}
}

// Put adds r; see ports.FleetStore.
func (f *Fleet) Put(_ context.Context, r ports.FleetRecord) (string, error) {
	if r.ID == "" || r.URL == "" {
		return "", fmt.Errorf("memory fleet: record without id or url")
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if id, ok := f.byURL[r.URL]; ok {
		if id == r.ID {
			return id, nil
		}
		return id, fmt.Errorf("%w: %s (id %s)", ports.ErrDuplicateURL, r.URL, id)
	}
	if old, ok := f.byID[r.ID]; ok {
		return old.ID, fmt.Errorf("memory fleet: id %s already registered for %s", r.ID, old.URL)
	}
	f.version++
	r.Seq = f.version
	r.Spec = slices.Clone(r.Spec)
	f.byID[r.ID] = r
	f.byURL[r.URL] = r.ID
	f.notify()
	return r.ID, nil
}

// Delete removes the record with id; see ports.FleetStore.
func (f *Fleet) Delete(_ context.Context, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	r, ok := f.byID[id]
	if !ok {
		return nil
	}
	delete(f.byID, id)
	delete(f.byURL, r.URL)
	f.version++
	f.notify()
	return nil
}

// List returns the version and the records in Seq order.
func (f *Fleet) List(context.Context) (int64, []ports.FleetRecord, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]ports.FleetRecord, 0, len(f.byID))
	for _, r := range f.byID {
		r.Spec = slices.Clone(r.Spec)
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b ports.FleetRecord) int { return int(a.Seq - b.Seq) })
	return f.version, out, nil
}

// Version returns the fleet's version.
func (f *Fleet) Version(context.Context) (int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.version, nil
}

// Watch returns a notice channel (buffer 1, coalesced) and its stop function.
func (f *Fleet) Watch() (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	f.mu.Lock()
	f.watchers[ch] = struct{}{}
	f.mu.Unlock()
	return ch, func() {
		f.mu.Lock()
		delete(f.watchers, ch)
		f.mu.Unlock()
	}
}

// notify wakes every watcher without blocking. Callers hold f.mu.
func (f *Fleet) notify() {
	for ch := range f.watchers {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}
