package memory

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/smg-go/smg/adapters/store/internal/wake"
	"github.com/smg-go/smg/ports"
)

// DefaultLeaseTTL is the lease time of a slot claim when none is configured: a lease not
// renewed within it is dropped and its slots return to the window.
const DefaultLeaseTTL = 10 * time.Second

// SlotsOptions tunes Slots. Zero values select the defaults.
type SlotsOptions struct {
	// LeaseTTL is the lease time of a claim (default DefaultLeaseTTL).
	LeaseTTL time.Duration
	// PollInterval bounds every Wait (default 250 ms).
	PollInterval time.Duration
	// Now is the clock (default time.Now); tests swap it.
	Now func() time.Time
}

// Slots is the in-memory ports.SlotCounter: per-instance admission counting, the default
// without --redis-url and the fallback while Redis is unreachable. Leases expire like the
// Redis adapter's, so a holder that never releases (a bug) loses its slots after LeaseTTL.
type Slots struct {
	ttl  time.Duration
	now  func() time.Time
	wq   *wake.Queues
	seq  atomic.Uint64
	mu   sync.Mutex
	byWk map[string]map[string]slotLease // worker URL -> lease ID -> lease
}

type slotLease struct {
	n       int
	expires time.Time
}

// NewSlots returns an empty in-memory SlotCounter.
func NewSlots(o SlotsOptions) *Slots {
	if o.LeaseTTL <= 0 {
		o.LeaseTTL = DefaultLeaseTTL
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return &Slots{ttl: o.LeaseTTL, now: o.Now, wq: wake.New(o.PollInterval),
		byWk: make(map[string]map[string]slotLease)}
}

// Claim takes n slots on worker if they fit in window (see ports.SlotCounter). It fails
// with an error when n < 1 or window < 1.
func (s *Slots) Claim(ctx context.Context, worker string, n, window int) (ports.Lease, bool, error) {
	if n < 1 || window < 1 {
		return ports.Lease{}, false, fmt.Errorf("memory slots: claim of %d slots in a window of %d: both must be >= 1", n, window)
	}
	s.mu.Lock()
	now := s.now()
	used := s.purgeLocked(worker, now)
	if used+n > window {
		s.mu.Unlock()
		return ports.Lease{}, false, nil
	}
	id := strconv.FormatUint(s.seq.Add(1), 36)
	ls := s.byWk[worker]
	if ls == nil {
		ls = make(map[string]slotLease)
		s.byWk[worker] = ls
	}
	ls[id] = slotLease{n: n, expires: now.Add(s.ttl)}
	s.mu.Unlock()
	if used+n < window {
		// Room left: pass a wake-up on (or leave a permit), so a waiter that registers
		// after two quick releases still learns about the second one.
		s.wq.Notify(worker, 1)
	}
	return ports.Lease{Worker: worker, ID: id, N: n, TTL: s.ttl}, true, nil
}

// Renew restarts the lease's TTL; ports.ErrLeaseLost when it expired or was released.
func (s *Slots) Renew(ctx context.Context, l ports.Lease) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	s.purgeLocked(l.Worker, now)
	ls := s.byWk[l.Worker]
	sl, ok := ls[l.ID]
	if !ok {
		return ports.ErrLeaseLost
	}
	sl.expires = now.Add(s.ttl)
	ls[l.ID] = sl
	return nil
}

// Release returns the lease's slots and wakes one waiter per freed slot; idempotent.
func (s *Slots) Release(ctx context.Context, l ports.Lease) error {
	s.mu.Lock()
	ls := s.byWk[l.Worker]
	sl, ok := ls[l.ID]
	if ok {
		delete(ls, l.ID)
		if len(ls) == 0 {
			delete(s.byWk, l.Worker)
		}
	}
	s.mu.Unlock()
	if ok {
		s.wq.Notify(l.Worker, sl.n)
	}
	return nil
}

// InstantRelease reports that Release answers at once from memory and never reads its
// context (app/admission skips the release's deadline).
func (s *Slots) InstantRelease() bool { return true }

// InUse returns the unexpired slots claimed on worker.
func (s *Slots) InUse(ctx context.Context, worker string) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.purgeLocked(worker, s.now()), nil
}

// Wait blocks until a release on worker, the poll interval, or the end of ctx (see
// ports.SlotCounter).
func (s *Slots) Wait(ctx context.Context, worker string) error {
	return s.wq.Wait(ctx, worker)
}

// purgeLocked drops worker's expired leases and returns the slots still held.
func (s *Slots) purgeLocked(worker string, now time.Time) int {
	ls := s.byWk[worker]
	used := 0
	for id, sl := range ls {
		if !now.Before(sl.expires) {
			delete(ls, id)
			continue
		}
		used += sl.n
	}
	if ls != nil && len(ls) == 0 {
		delete(s.byWk, worker)
	}
	return used
}

var _ ports.SlotCounter = (*Slots)(nil)
