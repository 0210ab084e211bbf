// Package watchdog is the gateway's per-worker progress watchdog and active canary. It
// follows every leg the HTTP dispatcher and the gRPC pipeline send (WrapEngine,
// WrapGenerator) and records, per worker, when each leg last made progress
// (domain/progress). A worker whose legs make no progress for its stall bound is suspect:
// it takes no new legs at once (worker.Live.SetSuspect) and gets a canary — a 1-token
// synthetic generate with its own deadline, never a client's request. A passing canary
// clears it; a failing one confirms it: its breaker opens (Breakers.Eject) and its stranded
// legs (those that delivered nothing) are cut with an unresponsive error, which the
// dispatcher and the pipeline charge and retry as a leg deadline. Canaries are also the
// half-open probes of open breakers: no client request goes through half-open.
package watchdog

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/smg-go/smg/domain/progress"
	"github.com/smg-go/smg/domain/worker"
	"github.com/smg-go/smg/ports"
)

// Breakers are the per-worker circuit breakers as the watchdog drives them
// (implemented by adapters/breaker.Set).
type Breakers interface {
	// Eject opens l's breaker at once; it reports whether it is open afterwards.
	Eject(l *worker.Live) bool
	// ProbeDue reports whether l's breaker waits for a canary (open past its timeout, or
	// half-open).
	ProbeDue(l *worker.Live) bool
	// Probe applies a canary's result to l's half-open breaker.
	Probe(l *worker.Live, pass bool)
}

// Options configure a Watchdog.
type Options struct {
	// Stall is the stall bound: floor, ceiling (--stall-timeout-secs) and factor.
	Stall progress.Settings
	// CanaryTimeout bounds one canary, head to completion (--canary-timeout-secs).
	CanaryTimeout time.Duration
	// Tick is how often workers are examined; 0 = a quarter of the floor, at most 1 s.
	Tick time.Duration
	// Disabled turns the stall detection off (legs are still passed through); breakers'
	// half-open canaries still run.
	Disabled bool
	Logger   *slog.Logger
}

// Watchdog watches every worker's progress. Its methods are safe for concurrent use.
type Watchdog struct {
	opt      Options
	store    ports.WorkerStore
	breakers Breakers
	now      func() time.Time

	httpEngine atomic.Pointer[engineBox]
	grpcGen    atomic.Pointer[generatorBox]

	mu      sync.Mutex
	workers map[string]*watched // by worker ID

	// bg counts the canaries and Abort RPCs in flight (Wait).
	bg sync.WaitGroup
}

type engineBox struct{ e ports.EngineClient }
type generatorBox struct{ g ports.GRPCGenerator }

// watched is one worker's record: its tracker and its legs in flight (to cut them).
type watched struct {
	tr *progress.Tracker

	mu    sync.Mutex
	kills map[progress.LegID]*leg
	// probing is set while a canary of the worker is in flight; lastCanary is when the
	// latest one ended.
	probing    atomic.Bool
	lastCanary atomic.Int64
}

// New builds a Watchdog over store's workers; breakers may be nil (no breakers).
func New(opt Options, store ports.WorkerStore, breakers Breakers) *Watchdog {
	if opt.Logger == nil {
		opt.Logger = slog.New(slog.DiscardHandler)
	}
	if opt.CanaryTimeout <= 0 {
		opt.CanaryTimeout = 5 * time.Second
	}
	if opt.Stall == (progress.Settings{}) {
		opt.Stall = progress.DefaultSettings()
	}
	if opt.Tick <= 0 {
		opt.Tick = min(max(opt.Stall.Floor/4, 50*time.Millisecond), time.Second)
	}
	return &Watchdog{opt: opt, store: store, breakers: breakers, now: time.Now, workers: map[string]*watched{}}
}

// watchedOf returns l's record, creating it.
func (w *Watchdog) watchedOf(l *worker.Live) *watched {
	w.mu.Lock()
	defer w.mu.Unlock()
	s, ok := w.workers[l.ID]
	if !ok {
		s = &watched{tr: progress.NewTracker(w.opt.Stall, w.now()), kills: map[progress.LegID]*leg{}}
		w.workers[l.ID] = s
	}
	return s
}

func (w *Watchdog) lookup(id string) *watched {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.workers[id]
}

// Wait waits for the canaries and Abort RPCs in flight (they end with Run's context, the
// Abort RPCs within their own deadline).
func (w *Watchdog) Wait() { w.bg.Wait() }

// Run examines the workers every tick until ctx ends; canaries end with ctx.
func (w *Watchdog) Run(ctx context.Context) {
	t := time.NewTicker(w.opt.Tick)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			w.Check(ctx)
		}
	}
}

// Check examines every registered worker once: an open breaker past its timeout gets a
// canary as its half-open probe; a worker whose legs stalled becomes suspect and gets a
// canary; a suspect worker gets another canary once per stall bound. Canaries run on their
// own goroutines bounded by ctx and --canary-timeout-secs; Check does not wait for them
// (Wait does).
func (w *Watchdog) Check(ctx context.Context) {
	now := w.now()
	list := w.store.List()
	w.forgetRemoved(list)
	for _, l := range list {
		if l.Role == worker.RoleEncode {
			continue
		}
		if w.breakers != nil && w.breakers.ProbeDue(l) {
			w.probe(ctx, l, func(pass bool) {
				w.breakers.Probe(l, pass)
				if pass {
					w.clear(l)
				}
			})
			continue
		}
		s := w.lookup(l.ID)
		if s == nil || w.opt.Disabled {
			continue
		}
		switch {
		case l.Suspect():
			if now.Sub(time.Unix(0, s.lastCanary.Load())) >= s.tr.Bound() {
				w.probe(ctx, l, func(pass bool) { w.verdict(l, s, pass) })
			}
		case s.tr.Suspect(now):
			l.SetSuspect(true)
			w.opt.Logger.Warn("worker made no progress within its stall bound; suspect until a canary answers",
				"worker", l.DisplayURL(), "worker_id", l.ID, "role", string(l.Role), "stall_bound", s.tr.Bound().String(),
				"legs_in_flight", s.tr.InFlight())
			w.probe(ctx, l, func(pass bool) { w.verdict(l, s, pass) })
		}
	}
}

// forgetRemoved drops the records of workers no longer registered once their last leg
// ended (a worker re-registered later starts afresh).
func (w *Watchdog) forgetRemoved(list []*worker.Live) {
	ids := make(map[string]bool, len(list))
	for _, l := range list {
		ids[l.ID] = true
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for id, s := range w.workers {
		if !ids[id] && s.tr.InFlight() == 0 && !s.probing.Load() {
			delete(w.workers, id)
		}
	}
}

// probe sends one canary to l unless one is in flight, and hands its result to done.
func (w *Watchdog) probe(ctx context.Context, l *worker.Live, done func(pass bool)) {
	s := w.watchedOf(l)
	if !s.probing.CompareAndSwap(false, true) {
		return
	}
	w.bg.Add(1)
	go func() {
		defer w.bg.Done()
		defer s.probing.Store(false)
		cctx, cancel := context.WithTimeout(ctx, w.opt.CanaryTimeout)
		defer cancel()
		err := w.canary(cctx, l)
		if ctx.Err() != nil {
			return // the gateway is stopping: no verdict
		}
		s.lastCanary.Store(w.now().UnixNano())
		if err != nil {
			w.opt.Logger.Warn("canary failed", "worker", l.DisplayURL(), "worker_id", l.ID, "err", err)
		}
		done(err == nil)
	}()
}

// verdict applies a suspect worker's canary: a pass clears it; a failure ejects it and cuts
// its stranded legs.
func (w *Watchdog) verdict(l *worker.Live, s *watched, pass bool) {
	if pass {
		w.opt.Logger.Info("canary passed; worker no longer suspect", "worker", l.DisplayURL(), "worker_id", l.ID)
		w.clear(l)
		return
	}
	ejected := w.breakers != nil && w.breakers.Eject(l)
	if ejected {
		l.SetSuspect(false) // the open breaker holds it out now; its canaries close it
	}
	cut := w.cutStranded(s)
	w.opt.Logger.Error("worker stalled: canary failed", "worker", l.DisplayURL(), "worker_id", l.ID,
		"breaker_opened", ejected, "stranded_legs_cut", cut)
}

// clear ends l's suspicion and restarts its silence clock.
func (w *Watchdog) clear(l *worker.Live) {
	l.SetSuspect(false)
	if s := w.lookup(l.ID); s != nil {
		s.tr.Cleared(w.now())
	}
}

// cutStranded cuts every leg of s that delivered nothing and returns how many.
func (w *Watchdog) cutStranded(s *watched) int {
	ids := s.tr.Stranded()
	var kills []*leg
	s.mu.Lock()
	for _, id := range ids {
		if k, ok := s.kills[id]; ok {
			kills = append(kills, k)
			delete(s.kills, id)
		}
	}
	s.mu.Unlock()
	for _, k := range kills {
		k.kill()
	}
	return len(kills)
}
