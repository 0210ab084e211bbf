package fleet

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/fx"

	"github.com/smg-go/smg/app"
	"github.com/smg-go/smg/app/config"
	"github.com/smg-go/smg/domain/wire"
)

// Bounds of the harness's own waits (hang guards, not timing assertions).
const (
	// StartTimeout bounds the gateway's fx start.
	StartTimeout = 15 * time.Second
	// ReadyTimeout bounds WaitWorkers: registration, probe, detection, /readiness.
	ReadyTimeout = 15 * time.Second
	// RequestTimeout bounds every request the harness sends to the gateway.
	RequestTimeout = 60 * time.Second
)

// DefaultConfig is config.Default() for an in-process test gateway: PD mode on,
// 127.0.0.1 on a free port, /metrics on the main mux (--prometheus-port 0), --policy
// round_robin, --log-level error, health probes every 250 ms (timeout 5 s so a loaded CI
// machine does not flap a healthy simulator; one success makes a worker ready; three
// failures make it not ready), a 5 s shutdown grace period without drain delay (no load
// balancer in front of a test gateway). No startup workers.
func DefaultConfig() config.Config {
	cfg := config.Default()
	cfg.Host = "127.0.0.1"
	cfg.Port = 0
	cfg.PrometheusPort = 0
	cfg.PDDisaggregation = true
	cfg.Policy = "round_robin"
	cfg.LogLevel = "error"
	cfg.HealthCheckInterval = 250 * time.Millisecond
	cfg.HealthCheckTimeout = 5 * time.Second
	cfg.HealthSuccessThreshold = 1
	cfg.ShutdownGracePeriod = 5 * time.Second
	cfg.ShutdownDrainDelay = 0
	return cfg
}

// Gateway is one smg started in-process with app.New. URL is "http://127.0.0.1:<port>".
// Client is the HTTP client the helpers use (its own transport, closed at cleanup).
type Gateway struct {
	URL    string
	Client *http.Client
	Config config.Config
	app    *fx.App
}

// StartGateway builds the gateway from cfg (plus extra fx options), starts it within
// StartTimeout and registers its stop (within the grace period + 5 s) with t.Cleanup. It
// fails the test when the config is invalid or the port cannot be bound.
func StartGateway(t testing.TB, cfg config.Config, extra ...fx.Option) *Gateway {
	t.Helper()
	var srv *app.Server
	a := app.New(cfg, append(extra, fx.Populate(&srv))...)
	require.NoError(t, a.Err(), "build the gateway")
	ctx, cancel := context.WithTimeout(context.Background(), StartTimeout)
	defer cancel()
	require.NoError(t, a.Start(ctx), "start the gateway")
	g := &Gateway{
		URL:    srv.URL(),
		Client: &http.Client{Timeout: RequestTimeout, Transport: &http.Transport{MaxIdleConnsPerHost: 1024, DisableCompression: true}},
		Config: cfg,
		app:    a,
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), cfg.ShutdownDrainDelay+cfg.ShutdownGracePeriod+5*time.Second)
		defer cancel()
		if err := a.Stop(ctx); err != nil {
			t.Errorf("stop the gateway: %v", err)
		}
		g.Client.CloseIdleConnections()
	})
	return g
}

// Register POSTs body (marshalled to JSON unless []byte or string) to /workers and requires
// 202 Accepted. It returns the worker id from the answer.
func (g *Gateway) Register(t testing.TB, body any) string {
	t.Helper()
	r := g.Post(t, "/workers", body, nil)
	require.Equal(t, http.StatusAccepted, r.Status, "POST /workers: %s", r.Body)
	var acc struct {
		WorkerID string `json:"worker_id"`
	}
	require.NoError(t, json.Unmarshal(r.Body, &acc))
	return acc.WorkerID
}

// WorkerInfo is the part of a GET /workers entry the suites read.
type WorkerInfo struct {
	ID          string `json:"id"`
	URL         string `json:"url"`
	ModelID     string `json:"model_id"`
	WorkerType  string `json:"worker_type"`
	RuntimeType string `json:"runtime_type"`
	KVConnector string `json:"kv_connector"`
	IsHealthy   bool   `json:"is_healthy"`
	Status      string `json:"status"`
	// DPBaseURL, DPRank and DPSize are set for a --dp-aware rank.
	DPBaseURL string `json:"dp_base_url"`
	DPRank    *int   `json:"dp_rank"`
	DPSize    *int   `json:"dp_size"`
}

// Workers returns GET /workers.
func (g *Gateway) Workers(t testing.TB) []WorkerInfo {
	t.Helper()
	r := g.Get(t, "/workers")
	require.Equal(t, http.StatusOK, r.Status, "GET /workers: %s", r.Body)
	var l struct {
		Workers []WorkerInfo `json:"workers"`
	}
	require.NoError(t, json.Unmarshal(r.Body, &l))
	return l.Workers
}

// WaitWorkers waits (at most ReadyTimeout) until exactly n workers are registered, all of
// them healthy and activated (their model detected: model_id set), and /readiness answers
// 200.
//
// Activation matters: the health checker can mark a just-registered worker ready before the
// registry has detected its runtime and models and swapped in the detected worker; a request
// in that window is routed with runtime "unspecified", or finds the worker missing during
// the swap (503). Waiting for model_id skips the window.
func (g *Gateway) WaitWorkers(t testing.TB, n int) {
	t.Helper()
	g.WaitUntil(t, fmt.Sprintf("%d workers healthy and detected, /readiness 200", n), func(ws []WorkerInfo) bool {
		return countReady(ws) == n && len(ws) == n && g.Get(t, "/readiness").Status == http.StatusOK
	})
}

// WaitWorkersHealthy is WaitWorkers without the /readiness condition, for fleets that are not
// ready on purpose (one leg missing).
func (g *Gateway) WaitWorkersHealthy(t testing.TB, n int) {
	t.Helper()
	g.WaitUntil(t, fmt.Sprintf("%d workers healthy and detected", n), func(ws []WorkerInfo) bool {
		return countReady(ws) == n && len(ws) == n
	})
}

// WaitUntil polls GET /workers every 20 ms until cond holds, failing the test after
// ReadyTimeout with what and the last worker list.
func (g *Gateway) WaitUntil(t testing.TB, what string, cond func([]WorkerInfo) bool) {
	t.Helper()
	deadline := time.Now().Add(ReadyTimeout)
	for {
		ws := g.Workers(t)
		if cond(ws) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("fleet: not %s within %s: %+v", what, ReadyTimeout, ws)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// countReady counts the healthy workers whose model_id is known (activation finished).
func countReady(ws []WorkerInfo) int {
	n := 0
	for _, w := range ws {
		if w.IsHealthy && w.ModelID != "" {
			n++
		}
	}
	return n
}

// Response is a complete answer of the gateway.
type Response struct {
	Status int
	Header http.Header
	Body   []byte
	// Elapsed is from sending the request to reading the last body byte.
	Elapsed time.Duration
}

// JSON decodes the body into a generic value (map[string]any, []any, ...).
func (r *Response) JSON(t testing.TB) any {
	t.Helper()
	var v any
	require.NoError(t, json.Unmarshal(r.Body, &v), "body is not JSON: %s", r.Body)
	return v
}

// Object decodes the body as a JSON object.
func (r *Response) Object(t testing.TB) map[string]any {
	t.Helper()
	m, ok := r.JSON(t).(map[string]any)
	require.True(t, ok, "body is not a JSON object: %s", r.Body)
	return m
}

// Get sends GET path and reads the whole answer.
func (g *Gateway) Get(t testing.TB, path string) *Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, g.URL+path, nil)
	require.NoError(t, err)
	return g.do(t, req)
}

// Post sends body as JSON (see Encode) to path with the extra headers and reads the whole
// answer. It never fails on an HTTP status, only on a transport error.
func (g *Gateway) Post(t testing.TB, path string, body any, hdr http.Header) *Response {
	t.Helper()
	req := g.NewRequest(t, context.Background(), path, body, hdr)
	return g.do(t, req)
}

// NewRequest builds a POST of body (see Encode) to the gateway's path with Content-Type
// application/json and the extra headers.
func (g *Gateway) NewRequest(t testing.TB, ctx context.Context, path string, body any, hdr http.Header) *http.Request {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, g.URL+path, bytes.NewReader(Encode(t, body)))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	for k, vs := range hdr {
		req.Header[k] = vs
	}
	return req
}

// Open sends a POST and returns the live response for incremental reading (first-chunk
// tests). The body is closed at cleanup if the test did not.
func (g *Gateway) Open(t testing.TB, ctx context.Context, path string, body any) *http.Response {
	t.Helper()
	resp, err := g.Client.Do(g.NewRequest(t, ctx, path, body, nil))
	require.NoError(t, err)
	t.Cleanup(func() { _ = resp.Body.Close() })
	return resp
}

func (g *Gateway) do(t testing.TB, req *http.Request) *Response {
	t.Helper()
	r, err := g.Do(req)
	require.NoError(t, err, "%s %s", req.Method, req.URL.Path)
	return r
}

// Do sends req with the gateway's client and reads the whole answer. Unlike Post it does not
// touch a testing.TB, so it is safe in goroutines; the error is a transport or read error.
func (g *Gateway) Do(req *http.Request) (*Response, error) {
	start := time.Now()
	resp, err := g.Client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		// A stream cut short shows what it had delivered (its last bytes) and where it went.
		return nil, fmt.Errorf("read %s %s (status %d, routed to %q, %d bytes read ending %q): %w", req.Method, req.URL.Path,
			resp.StatusCode, resp.Header.Get(wire.HeaderRoutedWorker), len(b), b[max(0, len(b)-300):], err)
	}
	return &Response{Status: resp.StatusCode, Header: resp.Header, Body: b, Elapsed: time.Since(start)}, nil
}

// Send POSTs the JSON bytes body to path; safe in goroutines (see Do).
func (g *Gateway) Send(ctx context.Context, path string, body []byte, hdr http.Header) (*Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, g.URL+path, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	for k, vs := range hdr {
		req.Header[k] = vs
	}
	return g.Do(req)
}

// Encode returns body as JSON bytes: []byte and string are sent as they are, anything else is
// marshalled with encoding/json.
func Encode(t testing.TB, body any) []byte {
	t.Helper()
	switch b := body.(type) {
	case nil:
		return nil
	case []byte:
		return b
	case string:
		return []byte(b)
	}
	b, err := json.Marshal(body)
	require.NoError(t, err)
	return b
}
