package health_test

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/adapters/store/memory"
	"github.com/smg-go/smg/app/config"
	"github.com/smg-go/smg/app/health"
	"github.com/smg-go/smg/domain/worker"
	"github.com/smg-go/smg/ports"
)

// probeLog counts probes per worker id.
type probeLog struct {
	mu sync.Mutex
	n  map[string]int
}

func (p *probeLog) add(id string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.n[id]++
}

func (p *probeLog) get(id string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.n[id]
}

// startWithProber starts a Checker over s whose probes go through probe.
func startWithProber(t *testing.T, s ports.WorkerStore, cfg config.Config, pool int, probe health.ProbeFunc) *health.Checker {
	t.Helper()
	c := health.New(s, cfg, nil, nil, nil)
	c.SetProber(probe)
	if pool > 0 {
		health.SetProbeConcurrency(c, pool)
	}
	require.NoError(t, c.Start(context.Background()))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		require.NoError(t, c.Stop(ctx))
	})
	return c
}

func liveWorker(id string, role worker.Role, interval time.Duration) *worker.Live {
	return worker.NewLive(worker.Worker{ID: id, URL: "http://127.0.0.1:1/" + id, Role: role, Mode: worker.ConnHTTP,
		Health: worker.HealthConfig{Interval: interval}}, worker.StatusReady)
}

func TestSchedulerProbesEachWorkerAtItsOwnInterval(t *testing.T) {
	t.Parallel()
	s := memory.NewWorkers()
	log := &probeLog{n: map[string]int{}}
	cfg := testConfig()
	cfg.HealthCheckInterval = 200 * time.Millisecond // the default for workers without an override
	startWithProber(t, s, cfg, 0, func(_ context.Context, w *worker.Live) error {
		log.add(w.ID)
		return nil
	})
	const n = 40
	for i := range n {
		var interval time.Duration
		if i%2 == 0 {
			interval = 10 * time.Millisecond
		}
		require.NoError(t, s.Add(liveWorker(fmt.Sprint(i), worker.RoleDecode, interval)))
	}
	// Every slow worker probed three times takes at least two of its intervals (400 ms), in
	// which a 10 ms worker is due forty times.
	require.Eventually(t, func() bool {
		for i := 1; i < n; i += 2 {
			if log.get(fmt.Sprint(i)) < 3 {
				return false
			}
		}
		return true
	}, waitFor, tick)
	for i := 0; i < n; i += 2 {
		fast, slow := log.get(fmt.Sprint(i)), log.get(fmt.Sprint(i+1))
		assert.Greater(t, fast, 2*slow, "worker %d (10 ms) against worker %d (200 ms)", i, i+1)
	}
}

func TestSchedulerStopsProbingRemovedWorkers(t *testing.T) {
	t.Parallel()
	s := memory.NewWorkers()
	log := &probeLog{n: map[string]int{}}
	var cancelled atomic.Int32
	cfg := testConfig()
	cfg.HealthCheckInterval = 10 * time.Millisecond
	startWithProber(t, s, cfg, 0, func(ctx context.Context, w *worker.Live) error {
		log.add(w.ID)
		if w.ID == "hung" {
			<-ctx.Done() // answers only when cancelled
			cancelled.Add(1)
		}
		return nil
	})
	const n = 20
	for i := range n {
		require.NoError(t, s.Add(liveWorker(fmt.Sprint(i), worker.RoleDecode, 0)))
	}
	require.NoError(t, s.Add(liveWorker("hung", worker.RoleDecode, 0)))
	require.Eventually(t, func() bool { return log.get("0") >= 3 && log.get("hung") == 1 }, waitFor, tick)

	for i := 0; i < n; i += 2 {
		_, err := s.Remove(fmt.Sprint(i))
		require.NoError(t, err)
	}
	_, err := s.Remove("hung")
	require.NoError(t, err)
	require.Eventually(t, func() bool { return cancelled.Load() == 1 }, waitFor, tick, "the removed worker's probe is cancelled")

	removed := make([]int, n)
	for i := 0; i < n; i += 2 {
		removed[i] = log.get(fmt.Sprint(i))
	}
	kept := log.get("1")
	require.Eventually(t, func() bool { return log.get("1") >= kept+5 }, waitFor, tick, "the others are still probed")
	for i := 0; i < n; i += 2 {
		assert.LessOrEqual(t, log.get(fmt.Sprint(i)), removed[i]+1, "worker %d: at most a probe already started", i)
	}
	assert.Equal(t, 1, log.get("hung"))
}

func TestSchedulerSlowProbesHoldOnlyTheirSlots(t *testing.T) {
	t.Parallel()
	s := memory.NewWorkers()
	log := &probeLog{n: map[string]int{}}
	release := make(chan struct{})
	cfg := testConfig()
	cfg.HealthCheckInterval = 5 * time.Millisecond
	startWithProber(t, s, cfg, 2, func(ctx context.Context, w *worker.Live) error {
		log.add(w.ID)
		if w.ID != "fast" {
			select { // a slow worker's probe holds its slot until released
			case <-release:
			case <-ctx.Done():
			}
		}
		return nil
	})
	require.NoError(t, s.Add(liveWorker("slow1", worker.RoleDecode, 0)))
	require.NoError(t, s.Add(liveWorker("fast", worker.RoleDecode, 0)))
	require.Eventually(t, func() bool { return log.get("slow1") == 1 && log.get("fast") >= 10 }, waitFor, tick,
		"one slow probe leaves the other slot to the fast worker")

	require.NoError(t, s.Add(liveWorker("slow2", worker.RoleDecode, 0)))
	require.Eventually(t, func() bool { return log.get("slow2") == 1 }, waitFor, tick)
	time.Sleep(20 * time.Millisecond) // a fast probe started before slow2 took the slot ends
	n := log.get("fast")
	time.Sleep(100 * time.Millisecond) // twenty intervals
	assert.Equal(t, n, log.get("fast"), "both slots held: nothing else is probed")

	close(release)
	require.Eventually(t, func() bool { return log.get("fast") >= n+10 }, waitFor, tick)
}

func TestSchedulerStopReturnsWithProbesInFlight(t *testing.T) {
	t.Parallel()
	s := memory.NewWorkers()
	var inFlight atomic.Int32
	c := health.New(s, testConfig(), nil, nil, nil)
	c.SetProber(func(ctx context.Context, _ *worker.Live) error {
		inFlight.Add(1)
		<-ctx.Done()
		inFlight.Add(-1)
		return ctx.Err()
	})
	require.NoError(t, c.Start(context.Background()))
	for i := range 10 {
		require.NoError(t, s.Add(liveWorker(fmt.Sprint(i), worker.RoleDecode, 0)))
	}
	require.Eventually(t, func() bool { return inFlight.Load() == 10 }, waitFor, tick)
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	require.NoError(t, c.Stop(ctx))
	assert.Zero(t, inFlight.Load(), "Stop waits for the probes it cancelled")
	require.NoError(t, c.Stop(ctx), "a second Stop")
	require.NoError(t, c.Start(context.Background()), "Start after Stop is a no-op")
	require.NoError(t, s.Add(liveWorker("late", worker.RoleDecode, 0)))
	time.Sleep(20 * time.Millisecond)
	assert.Zero(t, inFlight.Load())
}

// Not parallel: it counts the process's goroutines.
func TestSchedulerIdleGoroutinesDoNotGrowWithTheFleet(t *testing.T) {
	s := memory.NewWorkers()
	log := &probeLog{n: map[string]int{}}
	cfg := testConfig()
	cfg.HealthCheckInterval = time.Hour // after the first probe, everything is idle
	before := runtime.NumGoroutine()
	startWithProber(t, s, cfg, 0, func(_ context.Context, w *worker.Live) error {
		log.add(w.ID)
		return nil
	})
	const n = 500
	for i := range n {
		require.NoError(t, s.Add(liveWorker(fmt.Sprint(i), worker.RolePrefill, 0)))
	}
	require.Eventually(t, func() bool {
		for i := range n {
			if log.get(fmt.Sprint(i)) == 0 {
				return false
			}
		}
		return true
	}, waitFor, tick)
	// Polled here: Eventually runs its condition on a goroutine of its own.
	deadline := time.Now().Add(waitFor)
	for runtime.NumGoroutine() > before+1 && time.Now().Before(deadline) {
		time.Sleep(tick)
	}
	assert.LessOrEqual(t, runtime.NumGoroutine(), before+1, "one scheduler goroutine for %d workers", n)
}
