// Package app holds the use cases and the single fx composition root: New wires every
// adapter and service of the gateway from one config.Config.
package app

import (
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/danielgtaylor/huma/v2"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/fx"
	"go.uber.org/fx/fxevent"

	"github.com/smg-go/smg/adapters/api"
	"github.com/smg-go/smg/adapters/engine/grpcengine"
	"github.com/smg-go/smg/adapters/metrics"
	"github.com/smg-go/smg/adapters/store"
	"github.com/smg-go/smg/adapters/store/memory"
	"github.com/smg-go/smg/adapters/telemetry"
	"github.com/smg-go/smg/app/admission"
	"github.com/smg-go/smg/app/config"
	"github.com/smg-go/smg/app/discovery"
	"github.com/smg-go/smg/app/dispatch"
	"github.com/smg-go/smg/app/health"
	"github.com/smg-go/smg/app/kvroute"
	"github.com/smg-go/smg/app/pipeline"
	"github.com/smg-go/smg/app/registry"
	"github.com/smg-go/smg/app/tokenshare"
	"github.com/smg-go/smg/ports"
)

// stopMargin is added to --shutdown-drain-delay-secs + --shutdown-grace-period-secs for fx's
// stop deadline, so the other OnStop hooks (span flush, metrics listener) still run after a
// full drain and grace period.
const stopMargin = 10 * time.Second

// New builds the gateway: config (validated first: a bad value fails Start with the
// *config.FlagError), telemetry (slog, OpenTelemetry), metrics, the worker store, registry,
// health checker, the huma API, shared state (memory or Redis), decode admission, PD
// dispatch (its data-plane routes join the fx group "routes") and the main HTTP server. extra options are appended (tests
// use fx.Populate, fx.Decorate or fx.Replace). fx's own event log is silent unless
// --log-level is debug. Start binds the ports; Stop drains (Server: readiness 503,
// --shutdown-drain-delay-secs, then --shutdown-grace-period-secs) and returns a
// *ShutdownCutError when the grace period cut requests.
func New(cfg config.Config, extra ...fx.Option) *fx.App {
	return fx.New(Options(cfg, extra...))
}

// Options is the option set New builds the app from, for fxtest.New in tests.
func Options(cfg config.Config, extra ...fx.Option) fx.Option {
	if err := cfg.Validate(); err != nil {
		return fx.Options(fx.NopLogger, fx.Error(err))
	}
	opts := []fx.Option{
		fx.Supply(cfg),
		fx.StopTimeout(cfg.ShutdownDrainDelay + cfg.ShutdownGracePeriod + stopMargin),
		fx.WithLogger(func(log *slog.Logger) fxevent.Logger {
			if strings.EqualFold(cfg.LogLevel, "debug") {
				l := &fxevent.SlogLogger{Logger: log}
				l.UseLogLevel(slog.LevelDebug)
				return l
			}
			return fxevent.NopLogger
		}),
		telemetry.Module(),
		fx.Provide(func(c config.Config) telemetry.LogOptions { return LogOptions(c) }),
		metrics.Module(),
		fx.Provide(func(c config.Config) metrics.ServeOptions {
			return metrics.ServeOptions{Host: c.PrometheusHost, Port: c.PrometheusPort}
		}),
		memory.Module(),
		grpcengine.Module(), // gRPC workers: detection, health probes, engine-id refresh
		registry.Module(),
		discovery.Module(), // --service-discovery: Kubernetes pods become registrations
		health.Module(),
		// The registry owns a new HTTP worker's activation (probe, detection, swap): the
		// health checker must not make it ready first.
		fx.Invoke(func(c *health.Checker, r *registry.Service) {
			c.HoldPending(r.Activating)
			c.SetFactsRefresher(r.RefreshFacts)
		}),
		api.Module(),
		fx.Provide(func(c config.Config) api.Options {
			return api.Options{Host: c.Host, AdminAPIKey: c.AdminAPIKey, APIKey: c.APIKey,
				PDDisaggregation: c.PDDisaggregation, EPDDisaggregation: c.EPDDisaggregation,
				ReadyWithoutWorkers: c.ReadyWithoutWorkers}
		}),
		store.Module(),
		fx.Provide(func(c config.Config) store.SharedOptions {
			return store.SharedOptions{RedisURL: c.RedisURL, RedisCluster: c.RedisCluster, KeyPrefix: c.RedisKeyPrefix}
		}),
		fx.Provide(func(reg *prometheus.Registry) (dispatch.RetryRecorder, error) {
			return metrics.NewRetryMetrics(reg)
		}),
		fx.Provide(func(reg *prometheus.Registry) (store.FallbackCounter, error) {
			return metrics.NewFallbackCounter(reg)
		}),
		fx.Provide(func(reg *prometheus.Registry) (discovery.Recorder, error) {
			return metrics.NewDiscoveryMetrics(reg)
		}),
		admission.Module(),
		tokenshare.Module(),    // --load-metric tokens: in-flight tokens shared through Redis
		pipeline.TextModule(),  // gRPC text pipeline: tokenizers, chat templates
		pipeline.Module(),      // gRPC PD attempts, handed over by dispatch
		pipeline.LoadsModule(), // smg_engine_pd_* from the gRPC workers' load reports
		kvroute.Module(),       // --kv-events-routing: gRPC workers' KV events for cache_aware
		tenantsModule(),        // --tenants-file, --tenant-header: who each request is for
		dispatch.Module(),
		resilienceModule(),
		observabilityModule(),
		serverModule(),
	}
	opts = append(opts, extra...)
	// The server is invoked last, at the root: its OnStart runs after every other hook (it
	// listens once everything is up) and its OnStop runs first (drain before teardown).
	opts = append(opts, fx.Invoke(func(*Server) {}))
	return fx.Options(opts...)
}

// serverModule provides the main *http.ServeMux, the huma.API on it (api.NewHumaAPI: the
// admin/health operations, /openapi.yaml, /docs) and the *Server listening on it.
func serverModule() fx.Option {
	return fx.Module("server",
		fx.Provide(
			http.NewServeMux,
			func(mux *http.ServeMux) huma.API { return api.NewHumaAPI(mux) },
			newDrainer,
			func(d *drainer) ports.DrainState { return d },
			newServer,
		),
	)
}

// LogOptions maps --log-level, --log-format, --log-cloud-project, --log-json and --log-flush-interval-ms onto
// the logger's options.
func LogOptions(c config.Config) telemetry.LogOptions {
	return telemetry.LogOptions{Level: c.LogLevel, Format: c.LogFormat, JSON: c.LogJSON, CloudProject: c.LogCloudProject,
		FlushInterval: time.Duration(c.LogFlushIntervalMS) * time.Millisecond}
}
