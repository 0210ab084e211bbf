package store

import (
	"context"
	"errors"
	"strings"

	"github.com/smg-go/smg/ports"
)

// localID marks the IDs of leases FallbackSlots took in memory, so Renew and Release go
// back to the store that issued them.
const localID = "local:"

// FallbackSlots is a ports.SlotCounter that uses Primary (Redis) while it answers and
// Secondary (memory) while it does not; see the package doc for the behaviour.
type FallbackSlots struct {
	primary, secondary ports.SlotCounter
	h                  *health
}

// NewFallbackSlots wraps primary (Redis) with secondary (memory) as the fallback.
func NewFallbackSlots(primary, secondary ports.SlotCounter, o FallbackOptions) *FallbackSlots {
	return &FallbackSlots{primary: primary, secondary: secondary, h: newHealth("slots", o)}
}

// Down reports whether Redis is currently marked down.
func (f *FallbackSlots) Down() bool { return f.h.Down() }

// Claim claims in Redis, or in memory when Redis is down or fails. Invalid arguments
// (n < 1, window < 1) fail without touching Redis.
func (f *FallbackSlots) Claim(ctx context.Context, worker string, n, window int) (ports.Lease, bool, error) {
	if n < 1 || window < 1 {
		return f.secondary.Claim(ctx, worker, n, window) // the argument error
	}
	if f.h.usePrimary() {
		l, ok, err := f.primary.Claim(ctx, worker, n, window)
		if err == nil {
			f.h.ok()
			return l, ok, nil
		}
		if !f.h.failed(ctx, "claim", err) {
			return ports.Lease{}, false, err
		}
	}
	f.h.fellBack("claim")
	l, ok, err := f.secondary.Claim(ctx, worker, n, window)
	if ok {
		l.ID = localID + l.ID
	}
	return l, ok, err
}

// Renew renews the lease where it was taken. A Redis lease that cannot be renewed because
// Redis is down or failing returns nil (it will expire there; nothing else can be done);
// ports.ErrLeaseLost passes through.
func (f *FallbackSlots) Renew(ctx context.Context, l ports.Lease) error {
	if id, ok := strings.CutPrefix(l.ID, localID); ok {
		l.ID = id
		return f.secondary.Renew(ctx, l)
	}
	if !f.h.usePrimary() {
		f.h.fellBack("renew")
		return nil
	}
	err := f.primary.Renew(ctx, l)
	if err == nil || errors.Is(err, ports.ErrLeaseLost) {
		f.h.ok()
		return err
	}
	if !f.h.failed(ctx, "renew", err) {
		return err
	}
	f.h.fellBack("renew")
	return nil
}

// Release releases the lease where it was taken. A Redis lease that cannot be released
// because Redis is down or failing returns nil: it expires there within its TTL.
func (f *FallbackSlots) Release(ctx context.Context, l ports.Lease) error {
	if id, ok := strings.CutPrefix(l.ID, localID); ok {
		l.ID = id
		return f.secondary.Release(ctx, l)
	}
	if l.ID == "" {
		return nil
	}
	err := f.primary.Release(ctx, l)
	if err == nil {
		f.h.ok()
		return nil
	}
	if !f.h.failed(ctx, "release", err) {
		return err
	}
	f.h.fellBack("release")
	return nil
}

// InUse reads Redis, or memory when Redis is down or fails.
func (f *FallbackSlots) InUse(ctx context.Context, worker string) (int, error) {
	if f.h.usePrimary() {
		n, err := f.primary.InUse(ctx, worker)
		if err == nil {
			f.h.ok()
			return n, nil
		}
		if !f.h.failed(ctx, "in_use", err) {
			return 0, err
		}
	}
	f.h.fellBack("in_use")
	return f.secondary.InUse(ctx, worker)
}

// Wait waits on memory's release notifications alone while Redis is marked down, and on
// both stores' while it is up (a call that failed below the threshold took a memory lease,
// released in memory; one goroutine per Wait). Both are bounded by their poll interval, so
// a waiter registered before a switch returns within it and retries Claim on the store now
// in use.
func (f *FallbackSlots) Wait(ctx context.Context, worker string) error {
	if f.h.Down() {
		return f.secondary.Wait(ctx, worker)
	}
	both, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		err := f.primary.Wait(both, worker)
		cancel() // whichever returns first ends the other
		done <- err
	}()
	err := f.secondary.Wait(both, worker)
	cancel()
	perr := <-done
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if err == nil || perr == nil {
		return nil
	}
	return err
}

var _ ports.SlotCounter = (*FallbackSlots)(nil)
