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

	"github.com/smg-go/smg/adapters/telemetry"
	"github.com/smg-go/smg/app/config"
	"github.com/smg-go/smg/ports"
)

// Server is the gateway's main HTTP listener on --host:--port. It serves one
// *http.ServeMux holding the huma admin/health API and every ports.Route of the fx group
// "routes", behind the telemetry middleware (request id, server span, debug access log)
// and a --max-payload-size body limit.
type Server struct {
	cfg     config.Config
	log     *slog.Logger
	handler http.Handler
	srv     *http.Server

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
	Lifecycle fx.Lifecycle
}

// newServer mounts the routes on the mux, wraps it, and registers the listener with the
// lifecycle: OnStart binds --host:--port (start fails when the port is taken) and serves;
// OnStop stops accepting and waits up to --shutdown-grace-period-secs for in-flight requests
// before closing what is left. A route whose pattern is invalid or clashes with one already
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
	var h http.Handler = p.Mux
	if p.Config.MaxPayloadSize > 0 {
		h = http.MaxBytesHandler(h, p.Config.MaxPayloadSize)
	}
	h = telemetry.NewMiddleware(log, p.Tracer, telemetry.WithRequestIDHeaders(p.Config.RequestIDHeaders))(h)
	s := &Server{
		cfg:     p.Config,
		log:     log,
		handler: h,
		srv: &http.Server{
			Handler:           h,
			ReadHeaderTimeout: 10 * time.Second,
			IdleTimeout:       120 * time.Second,
			ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
		},
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

// stop drains: no new connections, in-flight requests get --shutdown-grace-period-secs
// (bounded also by ctx), then remaining connections are closed.
func (s *Server) stop(ctx context.Context) error {
	grace := s.cfg.ShutdownGracePeriod
	s.log.Info("smg shutting down", "grace_period_secs", grace.Seconds())
	sctx, cancel := context.WithTimeout(ctx, grace)
	defer cancel()
	if err := s.srv.Shutdown(sctx); err != nil {
		s.log.Warn("grace period over; closing remaining connections", "err", err)
		return s.srv.Close()
	}
	return nil
}
