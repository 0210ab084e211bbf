package memory

import (
	"context"
	"sync"
	"time"

	"github.com/smg-go/smg/ports"
)

// StickyOptions tunes Sticky. Zero values select the defaults.
type StickyOptions struct {
	// SweepInterval is how often a Set also drops every expired key (default 1 minute), so
	// keys that are never read again do not pile up.
	SweepInterval time.Duration
	// Now is the clock (default time.Now); tests swap it.
	Now func() time.Time
}

// Sticky is the in-memory ports.StickyStore: per-instance sticky keys, the default without
// --redis-url and the fallback while Redis is unreachable. Expired keys are dropped when
// read and by a sweep at most once per SweepInterval, run inside Set (no goroutine).
type Sticky struct {
	sweep time.Duration
	now   func() time.Time
	mu    sync.Mutex
	last  time.Time
	m     map[string]stickyEntry
}

type stickyEntry struct {
	worker  string
	ttl     time.Duration // <= 0: no expiry
	expires time.Time
}

// NewSticky returns an empty in-memory StickyStore.
func NewSticky(o StickyOptions) *Sticky {
	if o.SweepInterval <= 0 {
		o.SweepInterval = time.Minute
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return &Sticky{sweep: o.SweepInterval, now: o.Now, last: o.Now(), m: make(map[string]stickyEntry)}
}

// Get returns the worker pinned to key and restarts its idle expiry (see ports.StickyStore).
// It never fails.
func (s *Sticky) Get(ctx context.Context, key string) (string, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.m[key]
	if !ok {
		return "", false, nil
	}
	now := s.now()
	if e.ttl > 0 {
		if !now.Before(e.expires) {
			delete(s.m, key)
			return "", false, nil
		}
		e.expires = now.Add(e.ttl)
		s.m[key] = e
	}
	return e.worker, true, nil
}

// Set pins key to worker with idle expiry ttl (<= 0: none). It never fails.
func (s *Sticky) Set(ctx context.Context, key, worker string, ttl time.Duration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	s.m[key] = stickyEntry{worker: worker, ttl: ttl, expires: now.Add(ttl)}
	if now.Sub(s.last) >= s.sweep {
		s.last = now
		for k, e := range s.m {
			if e.ttl > 0 && !now.Before(e.expires) {
				delete(s.m, k)
			}
		}
	}
	return nil
}

// Delete removes key. It never fails.
func (s *Sticky) Delete(ctx context.Context, key string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m, key)
	return nil
}

// Len returns the number of stored keys, expired ones not yet swept included.
func (s *Sticky) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.m)
}

var _ ports.StickyStore = (*Sticky)(nil)
