package store

import (
	"context"
	"errors"
	"net"
	"strings"

	goredis "github.com/redis/go-redis/v9"

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

// Claim claims in Redis, or in memory when Redis is down or fails. One exception keeps a
// slow Redis from overshooting the shared window: a claim that times out while Redis is not
// (yet) marked down takes nothing and returns ok=false with no error, as if the window were
// full (not counted as a fallback; the timeout counts toward FailureThreshold, so a Redis
// that stays silent is marked down after FailureThreshold such calls and memory takes
// over). A connection error (refused, reset) falls back to memory at once. Invalid
// arguments (n < 1, window < 1) fail without touching Redis.
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
		if !f.h.Down() && slow(err) {
			// Redis is slow, not gone (a timeout below the failure threshold). Granting the
			// claim from memory would admit up to a full window on this instance on top of
			// the shared one: in a 300-request burst over three instances that put up to 4×
			// the window on the decode. Report the window as full instead: the admitter
			// waits and claims again within --pd-admission-wait-secs, or sheds.
			return ports.Lease{}, false, nil
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

// slow reports whether err is a timeout (the call's deadline, a network read/write timeout,
// or no free connection in the client's pool in time) rather than a refused or broken
// connection.
func slow(err error) bool {
	var ne net.Error
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, goredis.ErrPoolTimeout) ||
		(errors.As(err, &ne) && ne.Timeout())
}

var _ ports.SlotCounter = (*FallbackSlots)(nil)
