package metrics_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/fx"
	"go.uber.org/fx/fxtest"

	"github.com/smg-go/smg/adapters/metrics"
	"github.com/smg-go/smg/app/config"
	"github.com/smg-go/smg/domain/worker"
	"github.com/smg-go/smg/ports"
)

type routesIn struct {
	fx.In
	Routes []ports.Route `group:"routes"`
}

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := ln.Addr().(*net.TCPAddr).Port
	require.NoError(t, ln.Close())
	return port
}

func get(t *testing.T, h http.Handler, url string) (int, string) {
	t.Helper()
	var resp *http.Response
	var err error
	if h != nil {
		srvLn, lerr := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, lerr)
		srv := &http.Server{Handler: h}
		go func() { _ = srv.Serve(srvLn) }()
		defer srv.Close()
		url = "http://" + srvLn.Addr().String() + url
	}
	resp, err = http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(body)
}

func TestPrometheusPortZeroMountsRouteOnMainMux(t *testing.T) {
	t.Parallel()
	cfg := config.Default()
	cfg.PrometheusPort = 0
	var in routesIn
	var pd ports.PDMetrics
	app := fxtest.New(t, fx.Supply(metrics.ServeOptions{Host: cfg.PrometheusHost, Port: cfg.PrometheusPort}), metrics.Module(), fx.Populate(&in, &pd))
	app.RequireStart()
	defer app.RequireStop()

	require.Len(t, in.Routes, 1)
	assert.Equal(t, "GET /metrics", in.Routes[0].Pattern)
	pd.IncAdmissionShed()
	mux := http.NewServeMux()
	mux.Handle(in.Routes[0].Pattern, in.Routes[0].Handler)
	status, body := get(t, mux, "/metrics")
	assert.Equal(t, http.StatusOK, status)
	assert.Contains(t, body, "smg_pd_admission_sheds_total 1\n")
	assert.Contains(t, body, `smg_pd_kv_connector_mode_total{mode="passthrough"} 0`)
}

func TestOwnPortServesMetrics(t *testing.T) {
	t.Parallel()
	cfg := config.Default()
	cfg.PrometheusHost = "127.0.0.1"
	cfg.PrometheusPort = freePort(t)
	var in routesIn
	var hm ports.HealthMetrics
	app := fxtest.New(t, fx.Supply(metrics.ServeOptions{Host: cfg.PrometheusHost, Port: cfg.PrometheusPort}), metrics.Module(), fx.Populate(&in, &hm))
	app.RequireStart()
	defer app.RequireStop()

	assert.Empty(t, in.Routes, "no /metrics route on the main mux when --prometheus-port is set")
	hm.ObserveHealthCheck("decode", "success")
	status, body := get(t, nil, "http://127.0.0.1:"+strconv.Itoa(cfg.PrometheusPort)+"/metrics")
	assert.Equal(t, http.StatusOK, status)
	assert.Contains(t, body, `smg_worker_health_checks_total{result="success",worker_type="decode"} 1`)
	assert.Contains(t, body, "go_goroutines")
}

func TestStartFailsWhenMetricsPortIsTaken(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	cfg := config.Default()
	cfg.PrometheusHost = "127.0.0.1"
	cfg.PrometheusPort = ln.Addr().(*net.TCPAddr).Port
	app := fx.New(fx.NopLogger, fx.Supply(metrics.ServeOptions{Host: cfg.PrometheusHost, Port: cfg.PrometheusPort}), metrics.Module())
	err = app.Start(context.Background())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "--prometheus-host/--prometheus-port")
}

// fakeStore is the smallest ports.WorkerStore: enough to fire events.
type fakeStore struct {
	ports.WorkerStore
	workers []*worker.Live
	subs    []func(ports.WorkerEvent)
}

func (f *fakeStore) List() []*worker.Live                 { return f.workers }
func (f *fakeStore) Subscribe(fn func(ports.WorkerEvent)) { f.subs = append(f.subs, fn) }
func (f *fakeStore) emit(kind string, l *worker.Live) {
	for _, fn := range f.subs {
		fn(ports.WorkerEvent{Kind: kind, Worker: l})
	}
}

func TestWorkerSeriesFollowTheStore(t *testing.T) {
	t.Parallel()
	cfg := config.Default()
	cfg.PrometheusPort = 0
	existing := worker.NewLive(worker.Worker{URL: "http://p:8000", Role: worker.RolePrefill}, worker.StatusReady)
	store := &fakeStore{workers: []*worker.Live{existing}}
	var m *metrics.Metrics
	app := fxtest.New(t, fx.Supply(metrics.ServeOptions{Host: cfg.PrometheusHost, Port: cfg.PrometheusPort}), fx.Provide(func() ports.WorkerStore { return store }),
		metrics.Module(), fx.Populate(&m))
	app.RequireStart()
	defer app.RequireStop()
	reg := m.Registry()

	assert.Equal(t, "worker=http://p:8000 1", render(t, reg, metrics.NameWorkerHealth, []string{"worker"}))
	d := worker.NewLive(worker.Worker{URL: "http://d:8000", Role: worker.RoleDecode}, worker.StatusPending)
	store.emit(ports.EventAdded, d)
	assert.Equal(t, "worker=http://d:8000 0;worker=http://p:8000 1", render(t, reg, metrics.NameWorkerHealth, []string{"worker"}))
	assert.Equal(t, "worker=http://d:8000 0;worker=http://p:8000 0", render(t, reg, metrics.NameWorkerRequestsActive, []string{"worker"}))
	d.SetStatus(worker.StatusReady)
	store.emit(ports.EventStatus, d)
	assert.Equal(t, "worker=http://d:8000 1;worker=http://p:8000 1", render(t, reg, metrics.NameWorkerHealth, []string{"worker"}))
	store.emit(ports.EventRemoved, existing)
	assert.Equal(t, "worker=http://d:8000 1", render(t, reg, metrics.NameWorkerHealth, []string{"worker"}))
	assert.Equal(t, "worker=http://d:8000 0", render(t, reg, metrics.NameWorkerRequestsActive, []string{"worker"}))
}
