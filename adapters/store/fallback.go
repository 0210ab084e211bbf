// Package store holds what sits above the individual shared-state adapters: the Fallback
// wrappers that serve from Redis while it answers and from the in-memory adapters while it
// does not, and the fx Module that picks the adapters from --redis-url.
//
// Redis-down behaviour (issue #8, "Redis unavailable"): every Redis call is bounded by a
// short timeout (adapters/store/redis, 100 ms by default). A call that fails is served by
// the in-memory adapter instead, with one exception: a slot claim that times out while Redis
// is not yet marked down takes nothing and reports the window full (the admitter waits and
// claims again, or sheds), so that a Redis slowed down by a burst cannot admit a window per
// instance on top of the shared one (FallbackSlots.Claim). FailureThreshold (default 3)
// consecutive failures mark Redis down and log one ERROR (a lone slow call is absorbed
// without a switch). While down, admission falls back to per-instance counting (each
// instance admits up to the full window, as SMG does) and sticky keys to the instance's own
// map. While down, calls go straight to memory (no timeout paid per request) and one call
// per RetryInterval (default 1 s) probes Redis again; the first success logs one WARN
// "recovered" and traffic returns to Redis. Every call served by memory because of the
// outage is reported to OnFallback. Leases taken in Redis before the outage expire there on
// their own within the lease TTL; leases taken in memory during it stay in memory until
// released.
package store

import (
	"context"
	"errors"
	"log/slog"
	"sync/atomic"
	"time"
)

// DefaultRetryInterval is how long a Fallback keeps serving from memory after a Redis
// failure before it tries Redis again.
const DefaultRetryInterval = time.Second

// DefaultFailureThreshold is the number of consecutive Redis failures that mark it down.
const DefaultFailureThreshold = 3

// FallbackOptions tune the Fallback wrappers. Zero values select the defaults.
type FallbackOptions struct {
	// RetryInterval is the time between Redis probes while Redis is down (default 1 s).
	RetryInterval time.Duration
	// FailureThreshold is the number of consecutive failed Redis calls that mark Redis
	// down (default 3). Each failed call is served by memory either way.
	FailureThreshold int
	// OnFallback is called once per call served by memory because Redis failed or is
	// marked down, with the store ("slots" or "sticky") and the operation ("claim",
	// "renew", "release", "in_use", "wait", "get", "set", "delete"). Wire it to a counter;
	// it must be cheap and safe for concurrent use. nil: not counted.
	OnFallback func(store, op string)
	// Logger receives the down/recovered transitions (default slog.Default()).
	Logger *slog.Logger
	// Now is the clock (default time.Now); tests swap it.
	Now func() time.Time
}

// health tracks whether the primary (Redis) is usable.
type health struct {
	store     string
	retry     time.Duration
	threshold int64
	now       func() time.Time
	log       *slog.Logger
	count     func(store, op string)
	fails     atomic.Int64 // consecutive failures
	down      atomic.Bool
	nextTry   atomic.Int64 // unix ns; while down, the first call at or after it probes Redis
}

func newHealth(store string, o FallbackOptions) *health {
	if o.RetryInterval <= 0 {
		o.RetryInterval = DefaultRetryInterval
	}
	if o.FailureThreshold < 1 {
		o.FailureThreshold = DefaultFailureThreshold
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return &health{store: store, retry: o.RetryInterval, threshold: int64(o.FailureThreshold),
		now: o.Now, log: o.Logger, count: o.OnFallback}
}

// usePrimary reports whether this call should go to Redis: always while up; while down,
// for one call per retry interval (the probe).
func (h *health) usePrimary() bool {
	if !h.down.Load() {
		return true
	}
	next, now := h.nextTry.Load(), h.now().UnixNano()
	return now >= next && h.nextTry.CompareAndSwap(next, now+int64(h.retry))
}

// failed records a Redis failure of op unless the caller's own context ended (a client
// that went away says nothing about Redis). It reports whether the call should fall back.
func (h *health) failed(ctx context.Context, op string, err error) bool {
	if ctx.Err() != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)) {
		return false
	}
	if h.fails.Add(1) < h.threshold && !h.down.Load() {
		return true // served by memory, Redis not marked down (yet)
	}
	h.nextTry.Store(h.now().UnixNano() + int64(h.retry))
	if h.down.CompareAndSwap(false, true) {
		h.log.Error("shared state: Redis unavailable, falling back to per-instance state",
			"store", h.store, "op", op, "err", err, "retry_every", h.retry)
	}
	return true
}

// ok records a Redis success.
func (h *health) ok() {
	if h.fails.Load() != 0 {
		h.fails.Store(0)
	}
	if h.down.CompareAndSwap(true, false) {
		h.log.Warn("shared state: Redis recovered, using shared state again", "store", h.store)
	}
}

// fellBack counts one call served by memory.
func (h *health) fellBack(op string) {
	if h.count != nil {
		h.count(h.store, op)
	}
}

// Down reports whether Redis is currently marked down.
func (h *health) Down() bool { return h.down.Load() }
