package redis_test

import (
	"testing"
	"time"

	"github.com/smg-go/smg/adapters/store/redis"
	"github.com/smg-go/smg/adapters/store/storetest"
	"github.com/smg-go/smg/ports"
)

// Two Fleet instances on two clients and one prefix: the replicas' view.
func TestFleetContract(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, be backend) {
		storetest.RunFleetStore(t, func(t *testing.T) (ports.FleetStore, ports.FleetStore) {
			ca, p := be.client(t)
			cb, _ := be.client(t)
			o := redis.Options{Prefix: p, OpTimeout: 2 * time.Second}
			a, b := redis.NewFleet(ca, o), redis.NewFleet(cb, o)
			t.Cleanup(func() { _ = a.Close(); _ = b.Close() })
			return a, b
		})
	})
}
