package api_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/smg-go/smg/adapters/api"
	"github.com/smg-go/smg/adapters/store/memory"
	"github.com/smg-go/smg/app/config"
	"github.com/smg-go/smg/app/health"
	"github.com/smg-go/smg/app/registry"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const waitFor, tick = 5 * time.Second, 5 * time.Millisecond

type gatewayOptions struct {
	pd     bool
	health bool // run the periodic health checker
	// readyEmpty is --ready-without-workers.
	readyEmpty bool
}

type gateway struct {
	reg   *registry.Service
	store *memory.Workers
}

// newGateway serves NewHumaAPI+Register over a loopback httptest server, backed by a real
// registry and memory store (and the health checker when asked), with 20 ms health
// intervals and no drain settle.
func newGateway(t *testing.T, o gatewayOptions) (*httptest.Server, gateway) {
	t.Helper()
	cfg := config.Default()
	cfg.PDDisaggregation = o.pd
	cfg.HealthCheckInterval = 20 * time.Millisecond
	cfg.HealthCheckTimeout = time.Second
	cfg.DrainSettle = 0
	store := memory.NewWorkers()
	quiet := slog.New(slog.DiscardHandler)
	reg := registry.New(store, cfg, nil, quiet)
	mux := http.NewServeMux()
	h := api.NewHumaAPI(mux)
	api.Register(h, api.Deps{Registry: reg, Store: store, PDDisaggregation: cfg.PDDisaggregation,
		ReadyWithoutWorkers: o.readyEmpty})
	srv := httptest.NewServer(mux)
	var checker *health.Checker
	if o.health {
		checker = health.New(store, cfg, nil, nil, quiet)
		require.NoError(t, checker.Start(context.Background()))
	}
	t.Cleanup(func() {
		srv.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		require.NoError(t, reg.Close(ctx))
		if checker != nil {
			require.NoError(t, checker.Stop(ctx))
		}
		http.DefaultClient.CloseIdleConnections()
	})
	return srv, gateway{reg: reg, store: store}
}

// fakeEngine is a loopback engine: /health (switchable), /v1/models with owned_by.
type fakeEngine struct {
	srv  *httptest.Server
	down atomic.Bool
}

func newEngine(t *testing.T, ownedBy, model string) *fakeEngine {
	t.Helper()
	e := &fakeEngine{}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /health", func(w http.ResponseWriter, _ *http.Request) {
		if e.down.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	})
	mux.HandleFunc("GET /v1/models", func(w http.ResponseWriter, _ *http.Request) {
		_ = json.NewEncoder(w).Encode(map[string]any{"object": "list", "data": []map[string]any{
			{"id": model, "object": "model", "owned_by": ownedBy},
		}})
	})
	e.srv = httptest.NewServer(mux)
	t.Cleanup(e.srv.Close)
	return e
}

type response struct {
	status int
	header http.Header
	body   string
}

func do(t *testing.T, method, url, body string) response {
	t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, url, r)
	require.NoError(t, err)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return response{status: resp.StatusCode, header: resp.Header, body: string(b)}
}

// register POSTs body and returns the new worker id.
func register(t *testing.T, base, body string) string {
	t.Helper()
	r := do(t, http.MethodPost, base+"/workers", body)
	require.Equal(t, http.StatusAccepted, r.status, r.body)
	var acc struct {
		WorkerID string `json:"worker_id"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.body), &acc))
	return acc.WorkerID
}

// waitHealthy waits until GET /workers/{id} reports is_healthy.
func waitHealthy(t *testing.T, base, id string) {
	t.Helper()
	require.Eventually(t, func() bool {
		status, body := get(base + "/workers/" + id)
		return status == http.StatusOK && strings.Contains(body, `"is_healthy":true`)
	}, waitFor, tick)
}

// get is a GET for require.Eventually conditions: it never fails the test (status 0 on a
// transport error).
func get(url string) (int, string) {
	resp, err := http.Get(url)
	if err != nil {
		return 0, ""
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}
