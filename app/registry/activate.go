package registry

import (
	"context"
	"time"

	"github.com/smg-go/smg/app/health"
	"github.com/smg-go/smg/domain/worker"
)

// activate waits for the worker's first successful probe, detects it and stores the
// detected worker as ready in place of l.
func (s *Service) activate(ctx context.Context, l *worker.Live, healthOff bool) {
	timeout := l.Health.Timeout
	if timeout <= 0 {
		timeout = s.cfg.HealthCheckTimeout
	}
	if timeout <= 0 {
		timeout = 5 * time.Second
	}
	if l.Mode == worker.ConnGRPC {
		s.activateGRPC(ctx, l, healthOff, timeout)
		return
	}
	maxPause := min(max(s.cfg.HealthCheckInterval, 10*time.Millisecond), 5*time.Second)
	pause := min(50*time.Millisecond, maxPause)
	warned := false
	for !healthOff {
		if !s.current(l) {
			return
		}
		release, err := s.probes.acquire(ctx)
		if err != nil {
			return
		}
		err = health.Probe(ctx, s.client, l.Worker, s.cfg.HealthCheckEndpoint, timeout)
		release()
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			return
		}
		if !warned {
			s.log.Warn("worker not answering yet; it stays pending and will be probed again",
				"worker", l.DisplayURL(), "worker_id", l.ID, "error", err.Error())
			warned = true
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(pause):
		}
		pause = min(pause*2, maxPause)
	}

	detected := s.detect(ctx, l.Worker, timeout)
	if ctx.Err() != nil {
		return
	}
	s.swapIn(l, detected, false)
}

// activation is one worker's activation in progress (activate); cancel ends it.
type activation struct{ cancel context.CancelFunc }

// endActivation forgets job, unless the worker's id already has another activation (the
// worker was removed and its id registered again meanwhile).
func (s *Service) endActivation(id string, job *activation) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.jobs[id] == job {
		delete(s.jobs, id)
	}
}

// swapIn stores detected as the ready worker in place of l, unless l was removed or failed
// meanwhile. engineIDRead marks detected.KVEngineID as just read from the engine.
func (s *Service) swapIn(l *worker.Live, detected worker.Worker, engineIDRead bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.current(l) {
		return
	}
	if n, ok := s.dpRanks(detected); ok {
		s.expandLocked(l, detected, n, engineIDRead)
		return
	}
	nl := worker.NewLive(detected, worker.StatusReady)
	nl.SetEngineIDConfirmed(engineIDRead)
	if err := s.store.Replace(l, nl); err != nil {
		s.log.Error("swapping in the detected worker failed", "worker", l.DisplayURL(), "worker_id", l.ID, "error", err.Error())
		return
	}
	s.log.Info("worker ready", "worker", nl.DisplayURL(), "worker_id", nl.ID, "worker_type", string(nl.Role),
		"runtime_type", string(nl.Runtime), "models", nl.Models)
}

// Activating reports whether the registry still owns the activation of the pending worker w
// (its first probe and detection have not finished). The health checker holds such a worker
// pending (health.Checker.HoldPending) so it is never routed before its runtime and models
// are known.
func (s *Service) Activating(w *worker.Live) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.jobs[w.ID]
	if !ok {
		return false
	}
	cur, err := s.store.Get(w.ID)
	return err == nil && cur == w
}

// current reports whether l is still the registered worker for its id and still waiting
// for activation (not failed or draining).
func (s *Service) current(l *worker.Live) bool {
	cur, err := s.store.Get(l.ID)
	if err != nil || cur != l {
		return false
	}
	st := l.Status()
	return st != worker.StatusFailed && st != worker.StatusDraining
}
