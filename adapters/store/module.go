package store

import (
	"context"
	"log/slog"
	"time"

	"go.uber.org/fx"

	"github.com/smg-go/smg/adapters/store/memory"
	"github.com/smg-go/smg/adapters/store/redis"
	"github.com/smg-go/smg/ports"
)

// FallbackCounter counts calls served by memory while Redis is unavailable (see
// FallbackOptions.OnFallback). Provide one in the fx graph (e.g. from the metrics adapter)
// to count them; without it they are only logged on transitions.
type FallbackCounter func(store, op string)

// SharedOptions choose the shared-state backend; the composition root maps --redis-url,
// --redis-cluster and --redis-key-prefix onto them.
type SharedOptions struct {
	// RedisURL is the Redis to share state through; "" keeps it in memory, per instance.
	RedisURL string
	// RedisCluster reads RedisURL as the seed nodes of a Redis Cluster (implied when the URL
	// names several seeds; see redis.NewClient for the forms).
	RedisCluster bool
	// KeyPrefix starts every key and channel name ("" takes redis.DefaultPrefix, "smg:").
	KeyPrefix string
	// OpTimeout bounds every Redis call (0 takes redis.DefaultOpTimeout, 100 ms); tests on
	// a loaded machine raise it.
	OpTimeout time.Duration
}

type sharedIn struct {
	fx.In
	LC      fx.Lifecycle
	Options SharedOptions
	Log     *slog.Logger    `optional:"true"`
	Counter FallbackCounter `optional:"true"`
}

type sharedOut struct {
	fx.Out
	Slots  ports.SlotCounter
	Sticky ports.StickyStore
	// Fleet is the shared worker registry; nil without --redis-url (registrations stay per
	// instance).
	Fleet ports.FleetStore
	// Tokens shares in-flight token load between instances: the Redis board with
	// --redis-url, else an in-memory board (this instance alone).
	Tokens ports.TokenBoard
	// Budgets are the tenants' token budgets: Redis (shared, in memory while Redis is down)
	// with --redis-url, else this instance's own.
	Budgets ports.TenantBudgets
}

// Module provides ports.SlotCounter, ports.StickyStore, ports.FleetStore and ports.TokenBoard. Without --redis-url they are the
// in-memory adapters (per instance). With it, the Redis adapters (prefix --redis-key-prefix,
// default "smg:"; 100 ms call timeout, 10 s lease TTL, 250 ms wait poll) wrapped in FallbackSlots
// and FallbackSticky over the in-memory ones. A Redis that does not answer at start-up is
// logged, not fatal: the gateway starts on per-instance state and switches to Redis once it
// answers. A URL go-redis cannot parse fails the start. The fleet (the shared worker
// registry, redis.Fleet) is nil without --redis-url and is not wrapped: while Redis is down
// the registry keeps its last known workers itself.
func Module() fx.Option {
	return fx.Module("store.shared", fx.Provide(newShared))
}

func newShared(in sharedIn) (sharedOut, error) {
	log := in.Log
	if log == nil {
		log = slog.Default()
	}
	memSlots := memory.NewSlots(memory.SlotsOptions{})
	memSticky := memory.NewSticky(memory.StickyOptions{})
	if in.Options.RedisURL == "" {
		return sharedOut{Slots: memSlots, Sticky: memSticky, Tokens: memory.NewTokenBoard(nil), Budgets: memory.NewTenantBudgets(nil)}, nil
	}
	redis.RouteLogs(log)
	c, err := redis.NewClient(in.Options.RedisURL, in.Options.RedisCluster, in.Options.OpTimeout)
	if err != nil {
		return sharedOut{}, err
	}
	o := redis.Options{Logger: log, Prefix: in.Options.KeyPrefix, OpTimeout: in.Options.OpTimeout}
	var slots *redis.Slots
	fleet := redis.NewFleet(c, o)
	in.LC.Append(fx.Hook{
		OnStart: func(ctx context.Context) error {
			if err := redis.Ping(ctx, c, 0); err != nil {
				log.Warn("shared state: Redis does not answer at start-up; per-instance state until it does",
					"err", err)
			}
			return nil
		},
		OnStop: func(context.Context) error {
			if slots != nil {
				_ = slots.Close()
			}
			_ = fleet.Close()
			return c.Close()
		},
	})
	slots = redis.NewSlots(context.Background(), c, o)
	fo := FallbackOptions{Logger: log, OnFallback: in.Counter}
	return sharedOut{
		Slots:   NewFallbackSlots(slots, memSlots, fo),
		Sticky:  NewFallbackSticky(redis.NewSticky(c, o), memSticky, fo),
		Fleet:   fleet,
		Tokens:  redis.NewTokenBoard(c, o),
		Budgets: NewFallbackBudgets(redis.NewTenantBudgets(c, o), memory.NewTenantBudgets(nil), fo),
	}, nil
}
