package health_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/adapters/engine/grpcengine"
	"github.com/smg-go/smg/adapters/store/memory"
	"github.com/smg-go/smg/app/health"
	"github.com/smg-go/smg/domain/worker"
	"github.com/smg-go/smg/test/sim/grpcsim"
)

func startGRPC(t *testing.T, cfg grpcsim.Config) *grpcsim.Server {
	t.Helper()
	srv, err := grpcsim.Start(cfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = srv.Close() })
	return srv
}

// A vLLM prefill restarted without a pinned engine id comes back with a new one: when the
// gRPC worker recovers from not_ready, the checker re-reads it before promoting the worker.
func TestGRPCEngineIDIsReReadOnRecovery(t *testing.T) {
	t.Parallel()
	first := startGRPC(t, grpcsim.Config{Engine: grpcsim.EngineVLLM, Role: grpcsim.RolePrefill, EngineID: "engine-old",
		KVConnector: grpcsim.ConnectorMooncake})
	port := first.Port()

	cfg := testConfig()
	cfg.HealthCheckInterval = 20 * time.Millisecond
	cfg.HealthCheckTimeout = time.Second
	cfg.HealthSuccessThreshold, cfg.HealthFailureThreshold = 1, 10
	store := memory.NewWorkers()
	pool := grpcengine.New(grpcengine.Options{})
	defer pool.Close()
	c := health.New(store, cfg, nil, nil, slog.New(slog.DiscardHandler))
	c.SetGRPC(pool)
	w := worker.NewLive(worker.Worker{ID: "w1", URL: first.URL(), Role: worker.RolePrefill, Runtime: worker.RuntimeVLLM,
		Mode: worker.ConnGRPC, KVConnector: "MooncakeConnector", KVEngineID: "engine-old"}, worker.StatusReady)
	w.SetEngineIDConfirmed(true)
	require.NoError(t, store.Add(w))
	http := worker.NewLive(worker.Worker{ID: "w2", URL: "http://127.0.0.1:1", Role: worker.RolePrefill,
		Runtime: worker.RuntimeVLLM, Mode: worker.ConnHTTP, KVConnector: "MooncakeConnector", KVEngineID: "http-id"}, worker.StatusReady)
	require.NoError(t, store.Add(http))
	require.NoError(t, c.Start(context.Background()))
	defer func() { _ = c.Stop(context.Background()) }()

	_ = first.Close()
	require.Eventually(t, func() bool { return w.Status() == worker.StatusNotReady }, waitFor, tick)
	assert.Equal(t, "engine-old", w.EngineID(), "a failing worker keeps its id")

	second := startGRPC(t, grpcsim.Config{Engine: grpcsim.EngineVLLM, Role: grpcsim.RolePrefill, Port: port,
		EngineID: "engine-new", KVConnector: grpcsim.ConnectorMooncake})
	_ = second
	require.Eventually(t, func() bool { return w.Status() == worker.StatusReady }, 15*time.Second, tick)
	assert.Equal(t, "engine-new", w.EngineID(), "re-read before the worker was promoted")
	assert.True(t, w.EngineIDConfirmed())
	assert.Equal(t, "http-id", http.EngineID(), "HTTP workers keep the registered id")
}

func TestGRPCHealthCheckDrivesTheStateMachine(t *testing.T) {
	t.Parallel()
	srv := startGRPC(t, grpcsim.Config{Engine: grpcsim.EngineTokenSpeed, Role: grpcsim.RoleDecode})
	cfg := testConfig()
	cfg.HealthCheckInterval = 20 * time.Millisecond
	cfg.HealthSuccessThreshold, cfg.HealthFailureThreshold = 2, 1
	store := memory.NewWorkers()
	pool := grpcengine.New(grpcengine.Options{})
	defer pool.Close()
	c := health.New(store, cfg, nil, nil, slog.New(slog.DiscardHandler))
	c.SetGRPC(pool)
	w := worker.NewLive(worker.Worker{ID: "t1", URL: srv.URL(), Role: worker.RoleDecode, Runtime: worker.RuntimeTokenSpeed,
		Mode: worker.ConnGRPC}, worker.StatusPending)
	require.NoError(t, store.Add(w))
	require.NoError(t, c.Start(context.Background()))
	defer func() { _ = c.Stop(context.Background()) }()
	require.Eventually(t, func() bool { return w.Status() == worker.StatusReady }, waitFor, tick)
	_ = srv.Close()
	require.Eventually(t, func() bool { return w.Status() != worker.StatusReady }, waitFor, tick)
}
