package ports

import (
	"context"

	"github.com/smg-go/smg/domain/kvevent"
)

// KVShare carries speculative prefix entries (kvevent.Shared) between gateway replicas, so
// every replica routes a burst of one prompt where the first replica sent it, before the
// worker's own KV events arrive (Redis with --redis-url: adapters/store/redis.KVShare).
type KVShare interface {
	// Publish sends e to every replica listening (this one included) and keeps it among
	// the recent entries until it expires. Errors: the store's failures and timeouts.
	Publish(ctx context.Context, e kvevent.Shared) error
	// Listen delivers every entry published from now on to f, one at a time, until ctx
	// ends or the connection fails (then it returns the error; call it again to resume).
	// ready is called once the subscription is in place.
	Listen(ctx context.Context, ready func(), f func(kvevent.Shared)) error
	// Recent returns the entries published in the last TTL that have not expired, newest
	// first, at most the store's bound: what a replica that (re)joins catches up from.
	Recent(ctx context.Context) ([]kvevent.Shared, error)
}
