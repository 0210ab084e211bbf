package kvroute

import (
	"context"
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/fx"

	"github.com/smg-go/smg/adapters/engine/grpcengine"
	"github.com/smg-go/smg/adapters/kvevents"
	"github.com/smg-go/smg/adapters/metrics"
	"github.com/smg-go/smg/adapters/store/redis"
	"github.com/smg-go/smg/app/config"
	"github.com/smg-go/smg/domain/policy"
	"github.com/smg-go/smg/domain/text"
	"github.com/smg-go/smg/domain/worker"
	"github.com/smg-go/smg/ports"
)

type moduleOut struct {
	fx.Out
	KV      policy.KVPrefixes
	Streams ports.KVStreams
}

type moduleIn struct {
	fx.In
	LC     fx.Lifecycle
	Config config.Config
	Store  ports.WorkerStore
	Pool   *grpcengine.Pool
	Log    *slog.Logger   `optional:"true"`
	Text   *text.Registry `optional:"true"`
	// Metrics receives the smg_kv_events_* and smg_router_kv_* series.
	Metrics *prometheus.Registry `optional:"true"`
}

// Module provides the Router as policy.KVPrefixes when --kv-events-routing is on (nil
// otherwise), following the worker registry and running its subscriptions from start to
// stop. With --redis-url the speculative entries are shared with the other replicas
// through Redis (redis.KVShare, on a client of its own; prefix --redis-key-prefix).
func Module() fx.Option {
	return fx.Module("kvroute", fx.Provide(func(in moduleIn) (moduleOut, error) {
		if !in.Config.KVEventsRouting {
			return moduleOut{}, nil
		}
		ttl := in.Config.KVSpeculativeTTL
		if ttl == 0 {
			ttl = -1 // the flag's 0 means none; Options' 0 means the default
		}
		o := Options{Dial: PoolDialer(in.Pool), MaxBlocks: in.Config.KVIndexMaxBlocks,
			SpeculativeTTL: ttl, Subscriber: kvevents.Options{Logger: in.Log}}
		var closeRedis func() error
		if in.Config.RedisURL != "" && ttl > 0 {
			c, err := redis.NewClient(in.Config.RedisURL, in.Config.RedisCluster, 0)
			if err != nil {
				return moduleOut{}, err
			}
			closeRedis = c.Close
			o.Shared = redis.NewKVShare(c, redis.KVShareOptions{Options: redis.Options{Prefix: in.Config.RedisKeyPrefix, Logger: in.Log}})
		}
		if in.Text != nil {
			o.Tokenizer = func(model string) bool { return in.Text.Loaded(model) != nil }
		}
		r, err := New(o)
		if err != nil {
			return moduleOut{}, err
		}
		if in.Metrics != nil {
			if err := metrics.RegisterKVEvents(in.Metrics, func() []metrics.KVWorkerSeries { return series(r) }); err != nil {
				return moduleOut{}, err
			}
		}
		r.Watch(in.Store)
		in.LC.Append(fx.Hook{
			OnStart: func(context.Context) error { r.Start(); return nil },
			OnStop: func(context.Context) error {
				r.Stop()
				if closeRedis != nil {
					return closeRedis()
				}
				return nil
			},
		})
		return moduleOut{KV: r, Streams: r}, nil
	}))
}

// PoolDialer opens a worker's SubscribeKvEvents client on its pooled gRPC channel.
func PoolDialer(pool *grpcengine.Pool) Dialer {
	return func(w worker.Worker) (kvevents.KvEventsClient, error) {
		cc, err := pool.Conn(w)
		if err != nil {
			return nil, err
		}
		return kvevents.ClientFor(w, cc)
	}
}

// series converts r's Stats for the metrics adapter.
func series(r *Router) []metrics.KVWorkerSeries {
	st := r.Stats()
	out := make([]metrics.KVWorkerSeries, len(st))
	for i, s := range st {
		out[i] = metrics.KVWorkerSeries{Worker: worker.RedactURL(s.URL), Subscribed: s.Subscribed, Connected: s.Connected, Stalled: s.Stalled,
			LagSeconds: s.LagSeconds, Gaps: s.Gaps, Resets: s.Resets, DecodeErrors: s.DecodeErrors, HasSeq: s.HasSeq,
			LastSeq: s.LastSeq, PredictedCached: s.PredictedCached, EngineCached: s.EngineCached, EnginePrompt: s.EnginePrompt,
			SpecConfirmed: s.Speculative.Confirmed, SpecExpired: s.Speculative.Expired, SpecDropped: s.Speculative.Dropped,
			SpecConfirmSeconds: s.Speculative.ConfirmSeconds}
	}
	return out
}
