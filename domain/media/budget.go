package media

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// ErrBudgetBusy is returned by Budget.Acquire when the budget stayed full for the whole
// wait: the caller sheds the request (503 with Retry-After) instead of preparing it.
var ErrBudgetBusy = errors.New("media: preparation budget busy")

// ErrOverBudget is returned by Budget.Acquire for a reservation larger than the whole
// memory budget: it could never be granted.
var ErrOverBudget = errors.New("media: larger than the whole preparation memory budget")

// Budget bounds media preparation across the process: at most slots preparations at once
// and at most maxBytes of media memory: the working memory of the preparations
// (Header.DecodeBytes) and the bytes held without a slot (fetched images, prepared pixel
// values until their request ends). Waiters are
// served in arrival order, so a large reservation is not starved by small ones. Safe for
// concurrent use; the zero value is not usable (NewBudget).
type Budget struct {
	slots    int
	maxBytes int64

	mu      sync.Mutex
	used    int
	bytes   int64
	waiters []*budgetWaiter
}

type budgetWaiter struct {
	n     int64
	slot  bool
	ready chan struct{}
}

// NewBudget returns a budget of slots concurrent preparations and maxBytes bytes; a value
// <= 0 leaves that dimension unbounded.
func NewBudget(slots int, maxBytes int64) *Budget {
	return &Budget{slots: slots, maxBytes: maxBytes}
}

// MaxBytes is the memory budget in bytes (<= 0: unbounded).
func (b *Budget) MaxBytes() int64 { return b.maxBytes }

func (b *Budget) fits(n int64, slot bool) bool {
	return (!slot || b.slots <= 0 || b.used < b.slots) && (b.maxBytes <= 0 || b.bytes+n <= b.maxBytes)
}

func (b *Budget) takeLocked(n int64, slot bool) {
	if slot {
		b.used++
	}
	b.bytes += n
}

// Acquire reserves one slot and n bytes, waiting at most wait (and while ctx lives) for
// them. It returns ErrOverBudget at once when n exceeds the whole budget, ErrBudgetBusy when
// wait passed, or ctx's error. Every nil return must be paired with Release(n) (or with
// Shrink and ReleaseBytes).
func (b *Budget) Acquire(ctx context.Context, n int64, wait time.Duration) error {
	return b.acquire(ctx, n, true, wait)
}

// AcquireBytes is Acquire without a slot: memory held by media that is not being prepared
// (fetched bytes, prepared pixel values on their way to the engine). Pair it with
// ReleaseBytes(n).
func (b *Budget) AcquireBytes(ctx context.Context, n int64, wait time.Duration) error {
	return b.acquire(ctx, n, false, wait)
}

func (b *Budget) acquire(ctx context.Context, n int64, slot bool, wait time.Duration) error {
	if b.maxBytes > 0 && n > b.maxBytes {
		return fmt.Errorf("%w: %d bytes, budget %d", ErrOverBudget, n, b.maxBytes)
	}
	b.mu.Lock()
	if len(b.waiters) == 0 && b.fits(n, slot) {
		b.takeLocked(n, slot)
		b.mu.Unlock()
		return nil
	}
	w := &budgetWaiter{n: n, slot: slot, ready: make(chan struct{})}
	b.waiters = append(b.waiters, w)
	b.mu.Unlock()

	t := time.NewTimer(wait)
	defer t.Stop()
	var err error
	select {
	case <-w.ready:
		return nil
	case <-t.C:
		err = fmt.Errorf("%w: waited %s", ErrBudgetBusy, wait)
	case <-ctx.Done():
		err = ctx.Err()
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	select {
	case <-w.ready: // granted while giving up: keep it
		return nil
	default:
	}
	for i, x := range b.waiters {
		if x == w {
			b.waiters = append(b.waiters[:i], b.waiters[i+1:]...)
			break
		}
	}
	b.grantLocked() // the head may have changed
	return err
}

// Release returns one slot and n bytes taken by Acquire and wakes the waiters that now fit.
func (b *Budget) Release(n int64) { b.Shrink(n, 0) }

// Shrink returns the slot of an Acquire(n) and all but keep of its bytes; keep stays
// reserved until ReleaseBytes(keep).
func (b *Budget) Shrink(n, keep int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.used--
	b.bytes -= n - keep
	b.grantLocked()
}

// ReleaseBytes returns n bytes taken by AcquireBytes or kept by Shrink.
func (b *Budget) ReleaseBytes(n int64) {
	if n == 0 {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.bytes -= n
	b.grantLocked()
}

func (b *Budget) grantLocked() {
	for len(b.waiters) > 0 && b.fits(b.waiters[0].n, b.waiters[0].slot) {
		w := b.waiters[0]
		b.waiters = b.waiters[1:]
		b.takeLocked(w.n, w.slot)
		close(w.ready)
	}
}

// InUse returns the slots and bytes currently reserved.
func (b *Budget) InUse() (slots int, bytes int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used, b.bytes
}
