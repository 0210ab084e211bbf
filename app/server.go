package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"go.opentelemetry.io/otel/trace"
	"go.uber.org/fx"

	"github.com/smg-go/smg/adapters/metrics"
	"github.com/smg-go/smg/adapters/telemetry"
	"github.com/smg-go/smg/app/config"
	"github.com/smg-go/smg/ports"
)

// Server is the gateway's main HTTP listener on --host:--port. It serves one
// *http.ServeMux holding the huma admin/health API and every ports.Route of the fx group
// "routes", behind the access log (which also records the RED metrics), the telemetry middleware (request id,
// server span named by route) and a --max-payload-size body limit. Its shutdown (stop) is the drain platforms expect:
// readiness 503 and a drain delay, then the grace period, then the cut.
type Server struct {
	cfg     config.Config
	log     *slog.Logger
	handler http.Handler
	srv     *http.Server
	drain   *drainer

	mu sync.Mutex
	ln net.Listener
}

// serverParams are the Server's fx dependencies.
type serverParams struct {
	fx.In
	Config    config.Config
	Mux       *http.ServeMux
	Routes    []ports.Route        `group:"routes"`
	Log       *slog.Logger         `optional:"true"`
	Tracer    trace.TracerProvider `optional:"true"`
	Drain     *drainer
	Lifecycle fx.Lifecycle
	RED       *metrics.RED `optional:"true"`
}

// newServer mounts the routes on the mux, wraps it, and registers the listener with the
// lifecycle: OnStart binds --host:--port (start fails when the port is taken) and serves;
// OnStop drains (see stop). A route whose pattern is invalid or clashes with one already
// mounted is an error, not a panic.
func newServer(p serverParams) (*Server, error) {
	log := p.Log
	if log == nil {
		log = slog.Default()
	}
	for _, r := range p.Routes {
		if err := mount(p.Mux, r); err != nil {
			return nil, err
		}
	}
	// Outermost first: the access log (puts the shared ports.RequestInfo in the context and
	// records the RED series from its one response capture), the request id and server
	// span, the body limit, the route recorder, the unmatched-route answers. Inside the
	// telemetry middleware nothing copies the request, so the mux's r.Pattern names the span.
	h := telemetry.RecordRoute(unmatched(p.Mux))
	if p.Config.MaxPayloadSize > 0 {
		h = limitBody(h, p.Config.MaxPayloadSize)
	}
	h = telemetry.NewMiddleware(log, p.Tracer, telemetry.WithRequestIDHeaders(p.Config.RequestIDHeaders))(h)
	// The access log captures the response once for its line and the RED series.
	var observers []telemetry.ResponseObserver
	if p.RED != nil {
		observers = append(observers, p.RED)
	}
	h = telemetry.AccessLog(log, observers...)(h)
	s := &Server{
		cfg:     p.Config,
		log:     log,
		handler: h,
		drain:   p.Drain,
		srv: &http.Server{
			Handler:           p.Drain.track(h),
			ReadHeaderTimeout: 10 * time.Second,
			IdleTimeout:       120 * time.Second,
			ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
			// Every request's context derives from the drainer's: the grace deadline cancels
			// it with dispatch.ErrShutdown, which the dispatcher answers 503.
			BaseContext: func(net.Listener) context.Context { return p.Drain.base },
		},
	}
	if p.RED != nil {
		s.srv.ConnState = p.RED.ConnState
	}
	p.Lifecycle.Append(fx.Hook{OnStart: s.start, OnStop: s.stop})
	return s, nil
}

func mount(mux *http.ServeMux, r ports.Route) (err error) {
	if r.Handler == nil {
		return fmt.Errorf("server: route %q has no handler", r.Pattern)
	}
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("server: cannot mount route %q: %v", r.Pattern, v)
		}
	}()
	mux.Handle(r.Pattern, r.Handler)
	return nil
}

// Handler is the fully wrapped handler the listener serves (for in-process tests).
func (s *Server) Handler() http.Handler { return s.handler }

// Addr is the bound address once started (useful with --port 0), else nil.
func (s *Server) Addr() net.Addr {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ln == nil {
		return nil
	}
	return s.ln.Addr()
}

// URL is "http://<bound address>" once started, else "".
func (s *Server) URL() string {
	a := s.Addr()
	if a == nil {
		return ""
	}
	return "http://" + a.String()
}

func (s *Server) start(context.Context) error {
	addr := net.JoinHostPort(s.cfg.Host, strconv.Itoa(s.cfg.Port))
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("server: listen on %s (--host/--port): %w", addr, err)
	}
	s.mu.Lock()
	s.ln = ln
	s.mu.Unlock()
	s.log.Info("smg listening", "addr", ln.Addr().String(), "pd_disaggregation", s.cfg.PDDisaggregation)
	go func() {
		if err := s.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Error("server stopped", "err", err)
		}
	}()
	return nil
}

// stop is the shutdown platforms expect (Kubernetes, Cloud Run, ECS):
//
//  1. At once: /readiness answers 503 "draining" and responses carry Connection: close
//     (idle keep-alive connections are closed), so clients and load balancers move away.
//  2. For --shutdown-drain-delay-secs new requests are still served: a load balancer keeps
//     sending for a few seconds after SIGTERM while it withdraws the endpoint.
//  3. The listener closes; in-flight requests get --shutdown-grace-period-secs to finish.
//  4. At the grace deadline every request still in flight is cut: its context is cancelled
//     with dispatch.ErrShutdown (a non-streaming request is answered 503
//     server_shutting_down, an open stream gets an SSE error event and data: [DONE]), the
//     handlers get up to cutFlush to write that, then the connections are closed and stop
//     returns a *ShutdownCutError (exit code 3). A clean drain returns nil.
//
// ctx (fx's stop deadline) bounds every step.
func (s *Server) stop(ctx context.Context) error {
	s.drain.draining.Store(true)
	s.srv.SetKeepAlivesEnabled(false)
	delay, grace := s.cfg.ShutdownDrainDelay, s.cfg.ShutdownGracePeriod
	if delay > 0 {
		s.log.Info("smg draining: /readiness answers 503, new requests are still served until the drain delay ends",
			"drain_delay_secs", delay.Seconds(), "in_flight", s.drain.active.Load())
		sleepCtx(ctx, delay)
	}
	s.log.Info("smg shutting down: listener closed, in-flight requests get the grace period",
		"grace_period_secs", grace.Seconds(), "in_flight", s.drain.active.Load())
	sctx, cancel := context.WithTimeout(ctx, grace)
	defer cancel()
	if err := s.srv.Shutdown(sctx); err == nil {
		return nil
	}
	cut := s.drain.cutAll()
	left := s.drain.waitIdle(ctx, cutFlush)
	s.log.Warn("grace period over: in-flight requests cut with 503 server_shutting_down; closing remaining connections",
		"cut", cut, "unfinished_after_flush", left)
	cerr := s.srv.Close()
	if cut > 0 {
		return &ShutdownCutError{Requests: cut, Grace: grace}
	}
	return cerr
}
