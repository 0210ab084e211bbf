package memory

import (
	"context"
	"errors"
	"maps"
	"sync"
	"time"

	"github.com/smg-go/smg/ports"
)

// TokenBoard is the in-memory ports.TokenBoard: the tables of the instances sharing this
// process (one, without --redis-url, so Others is empty in production; tests share one
// between several simulated instances). Expired tables are dropped when read.
type TokenBoard struct {
	now    func() time.Time
	mu     sync.Mutex
	tables map[string]tokenTable
}

type tokenTable struct {
	loads   map[string]int64
	expires time.Time
}

var _ ports.TokenBoard = (*TokenBoard)(nil)

// NewTokenBoard returns an empty board on clock now (nil: time.Now).
func NewTokenBoard(now func() time.Time) *TokenBoard {
	if now == nil {
		now = time.Now
	}
	return &TokenBoard{now: now, tables: map[string]tokenTable{}}
}

// Publish replaces instance's table (a copy of loads). Errors: empty instance, ttl <= 0.
func (b *TokenBoard) Publish(_ context.Context, instance string, loads map[string]int64, ttl time.Duration) error {
	if instance == "" || ttl <= 0 {
		return errors.New("memory token board: publish needs an instance and a ttl > 0")
	}
	t := tokenTable{loads: make(map[string]int64, len(loads)), expires: b.now().Add(ttl)}
	for w, n := range loads {
		if n > 0 {
			t.loads[w] = n
		}
	}
	b.mu.Lock()
	b.tables[instance] = t
	b.mu.Unlock()
	return nil
}

// Others sums the unexpired tables of the other instances. It never fails.
func (b *TokenBoard) Others(_ context.Context, instance string) (map[string]int64, error) {
	now := b.now()
	out := map[string]int64{}
	b.mu.Lock()
	defer b.mu.Unlock()
	maps.DeleteFunc(b.tables, func(_ string, t tokenTable) bool { return !now.Before(t.expires) })
	for id, t := range b.tables {
		if id == instance {
			continue
		}
		for w, n := range t.loads {
			out[w] += n
		}
	}
	return out, nil
}
