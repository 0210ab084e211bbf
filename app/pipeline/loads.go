package pipeline

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/smg-go/smg/domain/worker"
	"github.com/smg-go/smg/ports"
)

// DefaultLoadInterval is how often engine load reports are read (SMG's load monitor,
// --load-monitor-interval default 10 s; smg-spec.md §5.11).
const DefaultLoadInterval = 10 * time.Second

// loadTimeout bounds one worker's GetLoads.
const loadTimeout = 5 * time.Second

// LoadPoller publishes the smg_engine_pd_* gauges from the load reports of the gRPC
// prefill and decode workers (seed "Metrics": when an engine's load report includes
// disaggregation statistics, as the SGLang gRPC servicer's does).
type LoadPoller struct {
	store   ports.WorkerStore
	loads   ports.GRPCLoads
	metrics ports.EnginePDMetrics
	log     *slog.Logger

	stop chan struct{}
	done sync.WaitGroup
}

// NewLoadPoller builds a poller; Start runs it.
func NewLoadPoller(store ports.WorkerStore, loads ports.GRPCLoads, m ports.EnginePDMetrics, log *slog.Logger) *LoadPoller {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	lp := &LoadPoller{store: store, loads: loads, metrics: m, log: log, stop: make(chan struct{})}
	store.Subscribe(func(ev ports.WorkerEvent) {
		if ev.Kind == ports.EventRemoved && ev.Worker != nil {
			if _, err := store.GetByURL(ev.Worker.URL); err != nil {
				m.ForgetEnginePD(ev.Worker.URL)
			}
		}
	})
	return lp
}

// PollOnce reads every healthy gRPC prefill and decode worker's report once.
func (lp *LoadPoller) PollOnce(ctx context.Context) {
	for _, role := range []worker.Role{worker.RolePrefill, worker.RoleDecode} {
		for _, w := range lp.store.ByRole(role) {
			if w.Mode != worker.ConnGRPC || !w.Healthy() {
				continue
			}
			cctx, cancel := context.WithTimeout(ctx, loadTimeout)
			ls, err := lp.loads.DisaggLoads(cctx, w.Worker)
			cancel()
			if err != nil {
				lp.log.Debug("engine load report failed", "worker", w.DisplayURL(), "err", err)
				continue
			}
			for _, l := range ls {
				lp.metrics.SetEnginePD(w.URL, string(role), l)
			}
		}
	}
}

// Start polls every interval until Stop.
func (lp *LoadPoller) Start(interval time.Duration) {
	lp.done.Add(1)
	go func() {
		defer lp.done.Done()
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-lp.stop:
				return
			case <-t.C:
				ctx, cancel := context.WithCancel(context.Background())
				go func() {
					select {
					case <-lp.stop:
					case <-ctx.Done():
					}
					cancel()
				}()
				lp.PollOnce(ctx)
				cancel()
			}
		}
	}()
}

// Stop ends the polling and waits for it.
func (lp *LoadPoller) Stop() {
	close(lp.stop)
	lp.done.Wait()
}
