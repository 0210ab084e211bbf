package health

import (
	"container/heap"
	"context"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/fx"

	"github.com/smg-go/smg/app/config"
	"github.com/smg-go/smg/domain/worker"
	"github.com/smg-go/smg/ports"
)

// ProbeFunc probes one worker and returns nil when it is healthy. The default is Probe over
// HTTP, and the runtime's HealthCheck RPC for grpc:// workers once SetGRPC installed a
// client; SetProber swaps it.
type ProbeFunc func(ctx context.Context, w *worker.Live) error

// Checker probes every registered worker on its own schedule: at once when the worker is
// added (or already registered at Start), then every interval (the worker's health override,
// else cfg.HealthCheckInterval). Each result goes through Transition and a changed status is
// written with store.SetStatus. failed workers are no longer probed; draining workers are
// skipped. With cfg.DisableHealthCheck, or a worker's Health.Disable, nothing is probed; a
// grpc:// worker whose runtime's service the gateway does not speak (trtllm, mlx) is not
// probed either.
//
// One scheduler goroutine keeps every probed worker in a queue ordered by its next probe
// time and starts each due probe on a goroutine of its own, at most probeConcurrency at once;
// an idle Checker runs that one goroutine whatever the fleet's size. Removing a worker from
// the store cancels its in-flight probe and its schedule; Stop ends everything.
type Checker struct {
	store  ports.WorkerStore
	cfg    config.Config
	client *http.Client
	own    bool // client created here: close its idle connections on Stop
	m      ports.HealthMetrics
	log    *slog.Logger

	mu      sync.Mutex
	probe   ProbeFunc
	started bool
	stopped bool
	ctx     context.Context
	cancel  context.CancelFunc
	targets map[*worker.Live]*target // every worker probed or once probed (failed stays)
	due     dueHeap                  // the targets waiting for their next probe
	wake    chan struct{}            // the earliest due time may have changed
	slots   chan struct{}            // one token per probe in flight
	pool    int                      // probes in flight at most (probeConcurrency)
	wg      sync.WaitGroup

	hold  atomic.Pointer[func(*worker.Live) bool]
	grpc  atomic.Pointer[grpcBox]        // probes grpc:// workers (SetGRPC)
	facts atomic.Pointer[FactsRefresher] // re-reads a gRPC worker's facts (SetFactsRefresher)
}

// HoldPending installs a gate that keeps a pending worker pending even after
// success_threshold successful probes, while hold(w) reports true. The registry uses it:
// it owns the activation of a freshly registered HTTP worker (probe, runtime and model
// detection, then a swap to the detected, ready worker), and a worker made ready before that
// would be routed with an unknown runtime and no models. nil removes the gate. Failures are
// still counted, so a worker that never answers still fails after 10×failure_threshold probes.
func (c *Checker) HoldPending(hold func(w *worker.Live) bool) {
	if hold == nil {
		c.hold.Store(nil)
		return
	}
	c.hold.Store(&hold)
}

// New builds a Checker. client nil = a private client (its own transport); m nil = no metrics;
// logger nil = slog.Default(). Nothing runs until Start.
func New(store ports.WorkerStore, cfg config.Config, client *http.Client, m ports.HealthMetrics, logger *slog.Logger) *Checker {
	c := &Checker{store: store, cfg: cfg, client: client, m: m, log: logger,
		targets: map[*worker.Live]*target{}, wake: make(chan struct{}, 1), pool: probeConcurrency}
	if c.client == nil {
		c.client = &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
		c.own = true
	}
	if c.m == nil {
		c.m = nopMetrics{}
	}
	if c.log == nil {
		c.log = slog.Default()
	}
	c.probe = func(ctx context.Context, w *worker.Live) error {
		if b := c.grpc.Load(); b != nil && w.Mode == worker.ConnGRPC {
			return c.probeGRPC(ctx, b.e, w)
		}
		return Probe(ctx, c.client, w.Worker, c.cfg.HealthCheckEndpoint, c.timeout(w))
	}
	return c
}

// SetProber replaces the probe function; call it before Start.
func (c *Checker) SetProber(p ProbeFunc) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if p != nil {
		c.probe = p
	}
}

// Module provides *Checker and ties it to the fx lifecycle (Start on start, Stop on stop).
// It needs ports.WorkerStore and config.Config; *http.Client, ports.HealthMetrics and
// *slog.Logger are used when provided.
func Module() fx.Option {
	return fx.Module("health",
		fx.Provide(func(p params) *Checker {
			c := New(p.Store, p.Config, p.Client, p.Metrics, p.Logger)
			c.SetGRPC(p.GRPC)
			return c
		}),
		fx.Invoke(func(lc fx.Lifecycle, c *Checker) { lc.Append(fx.StartStopHook(c.Start, c.Stop)) }),
	)
}

type params struct {
	fx.In
	Store   ports.WorkerStore
	Config  config.Config
	Client  *http.Client        `optional:"true"`
	Metrics ports.HealthMetrics `optional:"true"`
	Logger  *slog.Logger        `optional:"true"`
	GRPC    ports.GRPCEngines   `optional:"true"`
}

// Start subscribes to store changes, starts the scheduler and schedules an immediate probe
// of every registered worker. It returns at once; it is a no-op with cfg.DisableHealthCheck,
// when already started, or after Stop.
func (c *Checker) Start(context.Context) error {
	c.mu.Lock()
	if c.started || c.stopped || c.cfg.DisableHealthCheck {
		c.mu.Unlock()
		return nil
	}
	c.started = true
	c.ctx, c.cancel = context.WithCancel(context.Background())
	c.slots = make(chan struct{}, max(c.pool, 1))
	c.wg.Add(1)
	go c.schedule(c.ctx)
	c.mu.Unlock()

	c.store.Subscribe(c.onEvent)
	for _, w := range c.store.List() {
		c.startLoop(w)
	}
	return nil
}

// Stop ends the scheduler, cancels the probes in flight and waits for them, at most until
// ctx is done (then it returns ctx's error). Safe to call more than once, and without Start.
func (c *Checker) Stop(ctx context.Context) error {
	c.mu.Lock()
	c.stopped = true
	if c.cancel != nil {
		c.cancel()
	}
	c.mu.Unlock()

	done := make(chan struct{})
	go func() { c.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		return ctx.Err()
	}
	if c.own {
		c.client.CloseIdleConnections()
	}
	return nil
}

func (c *Checker) onEvent(ev ports.WorkerEvent) {
	switch ev.Kind {
	case ports.EventAdded:
		c.startLoop(ev.Worker)
	case ports.EventRemoved:
		c.mu.Lock()
		if tg, ok := c.targets[ev.Worker]; ok {
			delete(c.targets, ev.Worker)
			tg.gone = true
			if tg.index >= 0 {
				heap.Remove(&c.due, tg.index)
			}
			if tg.cancel != nil {
				tg.cancel()
			}
		}
		c.mu.Unlock()
	}
}

// startLoop schedules w's first probe now, unless w is not to be probed or already known.
func (c *Checker) startLoop(w *worker.Live) {
	if w == nil || w.Health.Disable {
		return
	}
	if w.Mode == worker.ConnGRPC && !w.Runtime.HasGRPCService() {
		return // no probe exists for it here (TensorRT-LLM, MLX): kept as registered
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.started || c.stopped {
		return
	}
	if _, ok := c.targets[w]; ok {
		return
	}
	tg := &target{
		w:        w,
		probe:    c.probe,
		interval: pick(w.Health.Interval, c.cfg.HealthCheckInterval, 60*time.Second),
		t: Thresholds{
			Success: pickInt(w.Health.SuccessThreshold, c.cfg.HealthSuccessThreshold),
			Failure: pickInt(w.Health.FailureThreshold, c.cfg.HealthFailureThreshold),
		},
		next:  time.Now(),
		index: -1,
	}
	c.targets[w] = tg
	heap.Push(&c.due, tg)
	c.wakeLocked()
}

// apply records one probe result and writes a changed status.
func (c *Checker) apply(w *worker.Live, err error, counters Counters, t Thresholds) Counters {
	result := "success"
	if err != nil {
		result = "failure"
	}
	c.m.ObserveHealthCheck(string(w.Role), result)
	cur := w.Status()
	next, counters := Transition(cur, counters, err == nil, t)
	if cur == worker.StatusPending && next == worker.StatusReady {
		if h := c.hold.Load(); h != nil && (*h)(w) {
			next = cur // the registry activates it once detected
		}
	}
	// Re-read just before writing: a DELETE may have set draining while the probe ran.
	if next != cur && w.Status() == cur {
		c.store.SetStatus(w, next)
		lvl := slog.LevelInfo
		if next != worker.StatusReady {
			lvl = slog.LevelWarn
		}
		attrs := []any{"worker", w.DisplayURL(), "worker_id", w.ID, "worker_type", string(w.Role), "from", string(cur), "to", string(next)}
		if err != nil {
			attrs = append(attrs, "error", err.Error())
		}
		c.log.Log(context.Background(), lvl, "worker health status changed", attrs...)
	}
	c.m.SetWorkerHealth(w.URL, w.Status() == worker.StatusReady)
	return counters
}

func (c *Checker) timeout(w *worker.Live) time.Duration {
	return pick(w.Health.Timeout, c.cfg.HealthCheckTimeout, 5*time.Second)
}

func pick(override, def, fallback time.Duration) time.Duration {
	if override > 0 {
		return override
	}
	if def > 0 {
		return def
	}
	return fallback
}

func pickInt(override, def int) int {
	if override > 0 {
		return override
	}
	return def
}

type nopMetrics struct{}

func (nopMetrics) ObserveHealthCheck(string, string) {}
func (nopMetrics) SetWorkerHealth(string, bool)      {}
