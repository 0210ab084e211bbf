package redis_test

import (
	"context"
	"testing"

	"github.com/smg-go/smg/adapters/store/redis"
	"github.com/smg-go/smg/adapters/store/redis/redistest"
	"github.com/smg-go/smg/adapters/store/storetest"
)

// BenchmarkClaimRelease: claim+release through the Redis adapter (two round trips) with
// the production client settings. Target (issue #8): p99 <= 0.5 ms on loopback.
func BenchmarkClaimRelease(b *testing.B) {
	_, prefix := redistest.Client(b)
	c, err := redis.NewClient(redistest.URL(b), false, 0)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	s := redis.NewSlots(context.Background(), c, redis.Options{Prefix: prefix})
	defer s.Close()
	storetest.BenchClaimRelease(b, s)
}
