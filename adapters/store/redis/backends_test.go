package redis_test

import (
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/smg-go/smg/adapters/store/redis"
	"github.com/smg-go/smg/adapters/store/redis/redistest"
)

// backend is a Redis deployment the adapters' tests run against.
type backend struct {
	name string
	// client returns a client built the way the gateway builds it (redis.NewClient) and a
	// random key prefix whose keys are deleted when t ends.
	client func(t testing.TB) (goredis.UniversalClient, string)
}

// backends: a single server and a 3-master Redis Cluster (redistest.ClusterURL).
var backends = []backend{
	{"single", func(t testing.TB) (goredis.UniversalClient, string) {
		_, p := redistest.Client(t) // cleans the prefix up
		return productionClient(t, redistest.URL(t), false), p
	}},
	{"cluster", func(t testing.TB) (goredis.UniversalClient, string) {
		_, p := redistest.ClusterClient(t)
		return productionClient(t, redistest.ClusterURL(t), true), p
	}},
}

func productionClient(t testing.TB, url string, cluster bool) goredis.UniversalClient {
	t.Helper()
	c, err := redis.NewClient(url, cluster, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// forEachBackend runs f as a parallel subtest per backend.
func forEachBackend(t *testing.T, f func(t *testing.T, b backend)) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			f(t, b)
		})
	}
}
