package policy

import (
	"context"
	"time"
)

// StickyStore keeps manual's routing-key → worker pins (smg-spec.md §5.9). Keys arrive
// already namespaced by leg ("prefill:<key>", "decode:<key>"); the value is the worker URL
// (worker.Worker.URL). The in-memory and Redis adapters implement it; all methods are safe for
// concurrent use and honour ctx. manual treats every error as "store unavailable" and falls
// back to a fresh pick, so an implementation should fail fast rather than retry.
type StickyStore interface {
	// Get returns the worker pinned to key; ok is false when there is none (or it expired).
	Get(ctx context.Context, key string) (worker string, ok bool, err error)
	// Set pins key to worker, replacing any pin, and (re)starts its idle expiry: the pin
	// disappears ttl after the last Set.
	Set(ctx context.Context, key, worker string, ttl time.Duration) error
	// Delete removes key's pin; deleting a missing key is not an error.
	Delete(ctx context.Context, key string) error
}
