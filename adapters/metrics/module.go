package metrics

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.uber.org/fx"

	"github.com/smg-go/smg/domain/policy"
	"github.com/smg-go/smg/ports"
)

// Module provides the registry (*prometheus.Registry, with Go and process collectors),
// *Metrics, ports.PDMetrics, ports.HealthMetrics and ports.FlowQueueMetrics, and serves GET /metrics: on its own
// listener at --prometheus-host:--prometheus-port (start fails when that port is taken), or,
// with --prometheus-port 0, as a ports.Route in the fx group "routes" on the main mux.
// When a ports.WorkerStore is in the graph, per-worker series follow registrations.
func Module() fx.Option {
	return fx.Module("metrics",
		fx.Provide(
			NewRegistry,
			New,
			func(m *Metrics) ports.PDMetrics { return m },
			func(m *Metrics) ports.HealthMetrics { return m },
			NewFlowQueueMetrics,
			func(m *FlowQueueMetrics) ports.FlowQueueMetrics { return m },
			func(reg *prometheus.Registry) (policy.Observer, error) { return NewPolicyObserver(reg) },
			mainPortRoutes,
		),
		fx.Invoke(serveOwnPort, followWorkers),
	)
}

// Handler serves the registry in the Prometheus text exposition format.
func Handler(reg *prometheus.Registry) http.Handler {
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg})
}

type routesOut struct {
	fx.Out
	Routes []ports.Route `group:"routes,flatten"`
}

// mainPortRoutes mounts GET /metrics on the main mux when --prometheus-port is 0.
func mainPortRoutes(o ServeOptions, reg *prometheus.Registry) routesOut {
	if o.Port != 0 {
		return routesOut{}
	}
	return routesOut{Routes: []ports.Route{{Pattern: "GET /metrics", Handler: Handler(reg)}}}
}

// ServeOptions say where GET /metrics is served; the composition root maps
// --prometheus-host and --prometheus-port onto them.
type ServeOptions struct {
	// Host and Port are the /metrics listener's address; Port 0 serves /metrics on the main
	// mux instead.
	Host string
	Port int
}

type serveIn struct {
	fx.In
	LC      fx.Lifecycle
	Options ServeOptions
	Reg     *prometheus.Registry
	Log     *slog.Logger `optional:"true"`
}

// serveOwnPort runs the /metrics listener on --prometheus-host:--prometheus-port.
func serveOwnPort(in serveIn) {
	if in.Options.Port == 0 {
		return
	}
	log := in.Log
	if log == nil {
		log = slog.Default()
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", Handler(in.Reg))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	addr := net.JoinHostPort(in.Options.Host, strconv.Itoa(in.Options.Port))
	in.LC.Append(fx.Hook{
		OnStart: func(context.Context) error {
			ln, err := net.Listen("tcp", addr)
			if err != nil {
				return fmt.Errorf("metrics: listen on %s (--prometheus-host/--prometheus-port): %w", addr, err)
			}
			log.Info("metrics listening", "addr", ln.Addr().String(), "path", "/metrics")
			go func() {
				if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
					log.Error("metrics server stopped", "err", err)
				}
			}()
			return nil
		},
		OnStop: func(ctx context.Context) error { return srv.Shutdown(ctx) },
	})
}

type followIn struct {
	fx.In
	Metrics *Metrics
	Store   ports.WorkerStore `optional:"true"`
}

// followWorkers keeps smg_worker_health and smg_worker_requests_active in step with the
// registry: a new worker's series appear at once, a removed worker's series disappear.
func followWorkers(in followIn) {
	if in.Store == nil {
		return
	}
	m := in.Metrics
	in.Store.Subscribe(func(ev ports.WorkerEvent) {
		if ev.Worker == nil {
			return
		}
		url := ev.Worker.URL
		switch ev.Kind {
		case ports.EventAdded:
			m.AddWorker(url)
			m.SetWorkerHealth(url, ev.Worker.Healthy())
		case ports.EventStatus:
			m.SetWorkerHealth(url, ev.Worker.Healthy())
		case ports.EventRemoved:
			m.ForgetWorker(url)
		}
	})
	for _, w := range in.Store.List() {
		m.AddWorker(w.URL)
		m.SetWorkerHealth(w.URL, w.Healthy())
	}
}
