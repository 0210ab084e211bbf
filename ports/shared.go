package ports

import (
	"context"
	"errors"
	"time"
)

// State shared between gateway instances (issue #8): the decode admission window and the
// sticky routing keys. The in-memory adapters (adapters/store/memory) keep it per instance;
// the Redis adapters (adapters/store/redis) share it between every instance that uses the
// same Redis and key prefix, so N instances behave as one. One contract suite
// (adapters/store/storetest) holds every adapter to the contracts below.

// ErrLeaseLost is returned by SlotCounter.Renew when the lease is no longer held: it expired
// (the holder did not renew within its TTL) or it was released.
var ErrLeaseLost = errors.New("slot lease lost")

// StickyStore maps a routing key to the worker it is pinned to, with an idle expiry. Keys
// are namespaced by the caller (the manual policy uses "prefill:<key>" / "decode:<key>",
// smg-spec.md §5.9); workers are identified by URL, which every instance shares (worker IDs
// are per instance). All methods are safe for concurrent use.
type StickyStore interface {
	// Get returns the worker pinned to key and refreshes the key's idle expiry to the TTL
	// given by the last Set. ok is false when the key is unknown or idle for longer than its
	// TTL. err reports a store failure (e.g. Redis unreachable), never a missing key.
	Get(ctx context.Context, key string) (worker string, ok bool, err error)
	// Set pins key to worker and (re)starts its idle expiry: the key disappears after ttl
	// without a Get or Set. ttl <= 0 means no expiry.
	Set(ctx context.Context, key, worker string, ttl time.Duration) error
	// Delete removes key; deleting an unknown key is not an error.
	Delete(ctx context.Context, key string) error
}

// Lease is a claim of N slots on one decode worker's admission window (seed "Decode
// Admission Window (gRPC)"). It expires TTL after the claim or the last Renew, so the slots
// of a crashed holder come back on their own. Treat it as a value: the adapter that issued
// it interprets ID.
type Lease struct {
	// Worker is the decode worker's URL the slots were claimed on.
	Worker string
	// ID is opaque and unique per claim.
	ID string
	// N is the number of slots held (one per backend request), >= 1.
	N int
	// TTL is the lease time: the holder must Renew within it (every TTL/3 is advised).
	TTL time.Duration
}

// SlotCounter counts claimed slots per decode worker against that worker's running window
// (seed "Decode Admission Window (gRPC)"). Workers are keyed by URL. All methods are safe
// for concurrent use and are called on the request path: each is at most one store round
// trip (Wait excepted), and a Redis-backed adapter bounds every call by a short timeout.
type SlotCounter interface {
	// Claim atomically takes n slots on worker when the slots in use plus n stay within
	// window; otherwise it takes none and returns ok=false. Expired leases are dropped
	// first. n < 1 or window < 1 is an error. On success the lease must be renewed within
	// lease.TTL and released exactly when the work ends (Release is idempotent).
	Claim(ctx context.Context, worker string, n, window int) (lease Lease, ok bool, err error)
	// Renew restarts the lease's TTL. It returns ErrLeaseLost when the lease already
	// expired or was released (its slots may be held by someone else by now).
	Renew(ctx context.Context, l Lease) error
	// Release returns the lease's slots and wakes waiters on its worker. Releasing a lease
	// twice, or one that expired, is a no-op returning nil.
	Release(ctx context.Context, l Lease) error
	// InUse returns the number of unexpired slots claimed on worker (every instance's, for
	// a shared adapter).
	InUse(ctx context.Context, worker string) (int, error)
	// Wait blocks until a slot on worker may have been freed, and returns nil; or returns
	// ctx.Err() when ctx ends first. Wake-ups are hints, not promises: callers retry Claim
	// and Wait again on failure. A release wakes at most one waiter per instance (FIFO);
	// a release seen while nobody waits is remembered for the next Wait, so a release
	// between a failed Claim and Wait is not lost. A Wait never sleeps past the adapter's
	// poll interval (default 250 ms), which bounds the delay when a notification is lost or
	// a lease expired.
	Wait(ctx context.Context, worker string) error
}

// TokenBoard shares each gateway instance's in-flight token load per worker (prompt plus
// expected decode tokens, worker.Live.TokenLoad's local part), so that with --redis-url a
// token-aware policy on one instance sees what the others dispatched. Each instance
// publishes its whole table, replacing the previous one; an entry expires ttl after its
// publication, so a crashed instance's load disappears on its own. Workers are keyed by URL.
// All methods are safe for concurrent use; a Redis-backed adapter bounds each call by a short
// timeout.
type TokenBoard interface {
	// Publish replaces instance's table with loads (worker URL → tokens; entries <= 0 may
	// be left out), expiring ttl after now. An empty instance or ttl <= 0 is an error.
	Publish(ctx context.Context, instance string, loads map[string]int64, ttl time.Duration) error
	// Others returns, per worker URL, the sum of the unexpired tables of every instance
	// but instance. Workers nobody else loads are absent.
	Others(ctx context.Context, instance string) (map[string]int64, error)
}
