package pipeline

import (
	"context"
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/fx"

	"github.com/smg-go/smg/adapters/engine/grpcengine"
	"github.com/smg-go/smg/adapters/metrics"
	"github.com/smg-go/smg/app/admission"
	"github.com/smg-go/smg/app/config"
	"github.com/smg-go/smg/app/dispatch"
	"github.com/smg-go/smg/app/registry"
	"github.com/smg-go/smg/app/watchdog"
	"github.com/smg-go/smg/domain/policy"
	"github.com/smg-go/smg/domain/text"
	"github.com/smg-go/smg/domain/worker"
	"github.com/smg-go/smg/ports"
)

// NewBundleFetcher is the text.BundleFetcher of the tokenizer registry: it resolves a worker
// URL to the registered worker and opens its GetTokenizer bundle on the gRPC pool.
func NewBundleFetcher(store ports.WorkerStore, pool *grpcengine.Pool) text.BundleFetcher {
	return fetcher{store: store, pool: pool}
}

type fetcher struct {
	store ports.WorkerStore
	pool  *grpcengine.Pool
}

func (f fetcher) FetchTokenizerBundle(ctx context.Context, url string) (text.BundleStream, error) {
	w, err := f.store.GetByURL(url)
	if err != nil {
		return nil, err
	}
	return f.pool.FetchTokenizer(ctx, w.Worker)
}

// TextModule provides the tokenizer registry (*text.Registry): local sources first
// (--tokenizer-path, --model-path, worker labels), then the workers' GetTokenizer bundles
// through the gRPC pool; --chat-template overrides the model's template.
// At start-up a --model-path or --tokenizer-path that is not a local path (a hub id) is
// reported with a WARN (warnUnfetchable).
//
// The registry's tokenizers share the --tokenizer-cache-* cache (none when both layers are
// off), whose smg_tokenizer_cache_* series are registered when a Prometheus registry is.
func TextModule() fx.Option {
	return fx.Module("text", fx.Provide(func(cfg config.Config, store ports.WorkerStore, pool *grpcengine.Pool) *text.Registry {
		r := text.NewRegistry(text.OSFiles{}, NewBundleFetcher(store, pool), text.LoadOptions{ChatTemplatePath: cfg.ChatTemplate})
		r.UseCache(text.NewEncodeCache(cfg.TokenizerCache.Options()))
		return r
	}), fx.Invoke(func(cfg config.Config, log *slog.Logger) { warnUnfetchable(cfg, text.OSFiles{}, log) }),
		fx.Invoke(func(in cacheMetricsIn) error {
			if in.Registry == nil {
				return nil
			}
			return metrics.RegisterTokenizerCache(in.Registry, func() text.EncodeCacheStats { return in.Text.Cache().Stats() })
		}))
}

type cacheMetricsIn struct {
	fx.In
	Text     *text.Registry
	Registry *prometheus.Registry `optional:"true"`
}

type moduleIn struct {
	fx.In
	LC        fx.Lifecycle
	Config    config.Config
	Text      *text.Registry
	Pool      *grpcengine.Pool
	Admission *admission.Admitter
	Registry  *prometheus.Registry
	PDM       *metrics.Metrics
	Metrics   ports.PDMetrics          `optional:"true"`
	Outcomes  dispatch.OutcomeRecorder `optional:"true"`
	Log       *slog.Logger             `optional:"true"`
	Store     ports.WorkerStore
	Workers   *registry.Service  `optional:"true"`
	Watchdog  *watchdog.Watchdog `optional:"true"`
	// KV is the KV-event router (--kv-events-routing), nil otherwise.
	KV policy.KVPrefixes `optional:"true"`
}

// LoadsModule polls the gRPC workers' load reports every DefaultLoadInterval into the
// smg_engine_pd_* gauges.
func LoadsModule() fx.Option {
	return fx.Module("engine-loads", fx.Invoke(func(lc fx.Lifecycle, reg *prometheus.Registry, store ports.WorkerStore, pool *grpcengine.Pool, log *slog.Logger) error {
		m, err := metrics.NewEnginePDMetrics(reg)
		if err != nil {
			return err
		}
		lp := NewLoadPoller(store, pool, m, log)
		lc.Append(fx.Hook{
			OnStart: func(context.Context) error { lp.Start(DefaultLoadInterval); return nil },
			OnStop:  func(context.Context) error { lp.Stop(); return nil },
		})
		return nil
	}))
}

// Module provides the gRPC PD pipeline as dispatch.GRPCPipeline (the HTTP PD router hands
// it every attempt whose pair is gRPC) and, on stop, waits for the legs it retires.
func Module() fx.Option {
	return fx.Module("pipeline", fx.Provide(func(in moduleIn) (dispatch.GRPCPipeline, error) {
		rm, err := metrics.NewRouterMetrics(in.Registry, in.PDM)
		if err != nil {
			return nil, err
		}
		d := Deps{Config: in.Config, Text: in.Text, Engines: in.Watchdog.WrapGenerator(in.Pool), EngineIDs: in.Pool, Facts: factsOf(in.Workers), Admission: in.Admission, Metrics: in.Metrics,
			Outcomes: in.Outcomes, DecodeTTFT: rm, Logger: in.Log}
		if in.Config.EPDDisaggregation {
			picker, err := NewStoreEncodePicker(in.Store, in.Config.EncodePolicy, in.Config.PolicyOptions())
			if err != nil {
				return nil, err
			}
			forgetRemoved(in.Store, picker.Policy())
			d.Encoder, d.Encoders = in.Pool, picker
		}
		if c, ok := in.KV.(interface {
			EngineCached(url string, prompt, cached int)
		}); ok {
			d.CachedTokens = c.EngineCached
		}
		pl := New(d)
		in.LC.Append(fx.Hook{OnStop: pl.Close})
		return pl, nil
	}))
}

// factsOf is r's facts refresher, nil without a registry.
func factsOf(r *registry.Service) func(context.Context, *worker.Live) {
	if r == nil {
		return nil
	}
	return r.RefreshFacts
}
