package health_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/fx"
	"go.uber.org/fx/fxtest"
	"go.uber.org/goleak"

	"github.com/smg-go/smg/adapters/store/memory"
	"github.com/smg-go/smg/app/config"
	"github.com/smg-go/smg/app/health"
	"github.com/smg-go/smg/domain/worker"
	"github.com/smg-go/smg/ports"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const waitFor, tick = 5 * time.Second, 5 * time.Millisecond

// fakeWorker is a loopback engine answering GET /health with a switchable status.
type fakeWorker struct {
	srv    *httptest.Server
	status atomic.Int32
	hits   atomic.Int32
	auth   atomic.Value // last Authorization header
}

func newFakeWorker(t *testing.T) *fakeWorker {
	t.Helper()
	f := &fakeWorker{}
	f.status.Store(http.StatusOK)
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/health" {
			http.NotFound(w, r)
			return
		}
		f.hits.Add(1)
		f.auth.Store(r.Header.Get("Authorization"))
		w.WriteHeader(int(f.status.Load()))
	}))
	t.Cleanup(f.srv.Close)
	return f
}

type fakeMetrics struct {
	mu      sync.Mutex
	checks  map[string]int // worker_type/result
	healthy map[string]bool
}

func (m *fakeMetrics) ObserveHealthCheck(wt, result string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.checks[wt+"/"+result]++
}

func (m *fakeMetrics) SetWorkerHealth(url string, ok bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.healthy[url] = ok
}

func (m *fakeMetrics) get(key string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.checks[key]
}

func testConfig() config.Config {
	cfg := config.Default()
	cfg.HealthCheckInterval = 20 * time.Millisecond
	cfg.HealthCheckTimeout = time.Second
	cfg.HealthSuccessThreshold = 2
	cfg.HealthFailureThreshold = 3
	return cfg
}

func addWorker(t *testing.T, s ports.WorkerStore, id, url string, role worker.Role, st worker.Status) *worker.Live {
	t.Helper()
	l := worker.NewLive(worker.Worker{ID: id, URL: url, Role: role, Mode: worker.ConnHTTP}, st)
	require.NoError(t, s.Add(l))
	return l
}

func startChecker(t *testing.T, s ports.WorkerStore, cfg config.Config, m ports.HealthMetrics) *health.Checker {
	t.Helper()
	c := health.New(s, cfg, nil, m, nil)
	require.NoError(t, c.Start(context.Background()))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		require.NoError(t, c.Stop(ctx))
	})
	return c
}

func TestCheckerPendingWorkerBecomesReady(t *testing.T) {
	t.Parallel()
	f := newFakeWorker(t)
	s := memory.NewWorkers()
	m := &fakeMetrics{checks: map[string]int{}, healthy: map[string]bool{}}
	startChecker(t, s, testConfig(), m)

	w := addWorker(t, s, "p", f.srv.URL, worker.RolePrefill, worker.StatusPending)
	require.Eventually(t, w.Healthy, waitFor, tick)
	assert.GreaterOrEqual(t, m.get("prefill/success"), 2)
	// The health gauge is written just after the status, by the same probe loop.
	assert.Eventually(t, func() bool {
		m.mu.Lock()
		defer m.mu.Unlock()
		return m.healthy[f.srv.URL]
	}, waitFor, tick)
}

func TestCheckerStoppedWorkerTurnsUnhealthy(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		stop func(f *fakeWorker)
	}{
		{"worker answers 503", func(f *fakeWorker) { f.status.Store(http.StatusServiceUnavailable) }},
		{"worker process gone", func(f *fakeWorker) { f.srv.Close() }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFakeWorker(t)
			s := memory.NewWorkers()
			var statuses []worker.Status
			var mu sync.Mutex
			s.Subscribe(func(ev ports.WorkerEvent) {
				if ev.Kind == ports.EventStatus {
					mu.Lock()
					statuses = append(statuses, ev.Worker.Status())
					mu.Unlock()
				}
			})
			m := &fakeMetrics{checks: map[string]int{}, healthy: map[string]bool{}}
			startChecker(t, s, testConfig(), m)
			w := addWorker(t, s, "d", f.srv.URL, worker.RoleDecode, worker.StatusReady)
			require.Eventually(t, func() bool { return f.hits.Load() >= 1 }, waitFor, tick)

			tc.stop(f)
			require.Eventually(t, func() bool { return w.Status() == worker.StatusNotReady }, waitFor, tick)
			assert.False(t, w.Healthy())
			assert.GreaterOrEqual(t, m.get("decode/failure"), 3, "not_ready only after failure_threshold failures")
			mu.Lock()
			assert.Equal(t, worker.StatusNotReady, statuses[0], "ready goes to not_ready first")
			mu.Unlock()
			// 3x failure_threshold consecutive failures: failed, and probing stops.
			require.Eventually(t, func() bool { return w.Status() == worker.StatusFailed }, waitFor, tick)
			n := m.get("decode/failure")
			assert.GreaterOrEqual(t, n, 9)
			time.Sleep(100 * time.Millisecond) // several intervals; a failed worker is not probed
			assert.Equal(t, n, m.get("decode/failure"))
		})
	}
}

func TestCheckerRecoveredWorkerBecomesReadyAgain(t *testing.T) {
	t.Parallel()
	f := newFakeWorker(t)
	f.status.Store(http.StatusInternalServerError)
	s := memory.NewWorkers()
	startChecker(t, s, testConfig(), nil)
	w := addWorker(t, s, "r", f.srv.URL, worker.RoleRegular, worker.StatusReady)
	require.Eventually(t, func() bool { return w.Status() == worker.StatusNotReady }, waitFor, tick)
	f.status.Store(http.StatusOK)
	require.Eventually(t, w.Healthy, waitFor, tick)
}

func TestCheckerProbesRegisteredWorkersAtOnceAndSendsAPIKey(t *testing.T) {
	t.Parallel()
	f := newFakeWorker(t)
	s := memory.NewWorkers()
	l := worker.NewLive(worker.Worker{ID: "k", URL: f.srv.URL, Role: worker.RoleDecode, Mode: worker.ConnHTTP, APIKey: "sekret"}, worker.StatusPending)
	require.NoError(t, s.Add(l))
	cfg := testConfig()
	cfg.HealthCheckInterval = time.Hour // only the immediate probes can happen
	cfg.HealthSuccessThreshold = 1
	startChecker(t, s, cfg, nil)
	require.Eventually(t, l.Healthy, waitFor, tick)
	assert.Equal(t, "Bearer sekret", f.auth.Load())
}

func TestCheckerDisabled(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		globalOff bool
		workerOff bool
	}{
		{"--disable-health-check", true, false},
		{"worker health.disable_health_check", false, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFakeWorker(t)
			s := memory.NewWorkers()
			cfg := testConfig()
			cfg.DisableHealthCheck = tc.globalOff
			startChecker(t, s, cfg, nil)
			l := worker.NewLive(worker.Worker{ID: "x", URL: f.srv.URL, Role: worker.RoleDecode, Mode: worker.ConnHTTP,
				Health: worker.HealthConfig{Disable: tc.workerOff}}, worker.StatusPending)
			require.NoError(t, s.Add(l))
			time.Sleep(100 * time.Millisecond)
			assert.Zero(t, f.hits.Load())
			assert.Equal(t, worker.StatusPending, l.Status())
		})
	}
}

func TestCheckerRemovedWorkerIsNoLongerProbed(t *testing.T) {
	t.Parallel()
	f := newFakeWorker(t)
	s := memory.NewWorkers()
	startChecker(t, s, testConfig(), nil)
	addWorker(t, s, "gone", f.srv.URL, worker.RoleDecode, worker.StatusReady)
	require.Eventually(t, func() bool { return f.hits.Load() >= 2 }, waitFor, tick)
	_, err := s.Remove("gone")
	require.NoError(t, err)
	time.Sleep(50 * time.Millisecond) // let an in-flight probe finish
	n := f.hits.Load()
	time.Sleep(100 * time.Millisecond)
	assert.Equal(t, n, f.hits.Load())
}

func TestCheckerSkipsDrainingWorkers(t *testing.T) {
	t.Parallel()
	f := newFakeWorker(t)
	f.status.Store(http.StatusServiceUnavailable)
	s := memory.NewWorkers()
	startChecker(t, s, testConfig(), nil)
	w := addWorker(t, s, "dr", f.srv.URL, worker.RoleDecode, worker.StatusDraining)
	time.Sleep(100 * time.Millisecond)
	assert.Zero(t, f.hits.Load())
	assert.Equal(t, worker.StatusDraining, w.Status())
}

func TestCheckerCustomProberAndNonHTTPWorkers(t *testing.T) {
	t.Parallel()
	s := memory.NewWorkers()
	c := health.New(s, testConfig(), nil, nil, nil)
	var calls atomic.Int32
	c.SetProber(func(_ context.Context, w *worker.Live) error {
		calls.Add(1)
		if w.Mode == worker.ConnGRPC {
			return nil
		}
		return errors.New("down")
	})
	require.NoError(t, c.Start(context.Background()))
	t.Cleanup(func() { require.NoError(t, c.Stop(context.Background())) })
	g := worker.NewLive(worker.Worker{ID: "g", URL: "grpc://127.0.0.1:1", Role: worker.RolePrefill, Mode: worker.ConnGRPC}, worker.StatusPending)
	require.NoError(t, s.Add(g))
	require.Eventually(t, g.Healthy, waitFor, tick)
}

func TestProbe(t *testing.T) {
	t.Parallel()
	f := newFakeWorker(t)
	client := &http.Client{}
	t.Cleanup(client.CloseIdleConnections)
	ok := worker.Worker{URL: f.srv.URL, Mode: worker.ConnHTTP}
	require.NoError(t, health.Probe(context.Background(), client, ok, "/health", time.Second))

	f.status.Store(http.StatusServiceUnavailable)
	err := health.Probe(context.Background(), client, ok, "/health", time.Second)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "status 503")

	err = health.Probe(context.Background(), client, ok, "/nope", time.Second)
	assert.ErrorContains(t, err, "status 404")

	grpc := worker.Worker{URL: "grpc://127.0.0.1:1", Mode: worker.ConnGRPC}
	assert.ErrorIs(t, health.Probe(context.Background(), client, grpc, "/health", time.Second), health.ErrUnsupportedTransport)

	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }))
	t.Cleanup(hang.Close)
	err = health.Probe(context.Background(), client, worker.Worker{URL: hang.URL, Mode: worker.ConnHTTP}, "/health", 20*time.Millisecond)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
}

func TestModuleLifecycle(t *testing.T) {
	t.Parallel()
	f := newFakeWorker(t)
	var store ports.WorkerStore
	app := fxtest.New(t,
		fx.NopLogger,
		memory.Module(),
		fx.Supply(testConfig()),
		health.Module(),
		fx.Populate(&store),
	)
	app.RequireStart()
	w := addWorker(t, store, "m", f.srv.URL, worker.RoleDecode, worker.StatusPending)
	require.Eventually(t, w.Healthy, waitFor, tick)
	app.RequireStop()
}

func TestCheckerHoldPendingKeepsWorkerPendingUntilReleased(t *testing.T) {
	t.Parallel()
	f := newFakeWorker(t)
	s := memory.NewWorkers()
	m := &fakeMetrics{checks: map[string]int{}, healthy: map[string]bool{}}
	c := startChecker(t, s, testConfig(), m)
	var held atomic.Bool
	held.Store(true)
	c.HoldPending(func(*worker.Live) bool { return held.Load() })

	w := addWorker(t, s, "h", f.srv.URL, worker.RolePrefill, worker.StatusPending)
	require.Eventually(t, func() bool { return m.get("prefill/success") >= 4 }, waitFor, tick)
	assert.Equal(t, worker.StatusPending, w.Status(), "held: successful probes must not make it ready")
	held.Store(false)
	require.Eventually(t, w.Healthy, waitFor, tick)
}
