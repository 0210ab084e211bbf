package pairing_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/fx"

	"github.com/smg-go/smg/app/config"
	"github.com/smg-go/smg/domain/wire"
	"github.com/smg-go/smg/test/fleet"
	"github.com/smg-go/smg/test/sim"
)

// model is the simulators' default served model.
const model = "sim-model"

// seedPrefix starts every no_compatible_pd_pair message (domain/pairing.ExplainPrefix).
const seedPrefix = "no prefill worker shares a KV transfer protocol with any decode worker"

// vllmSim starts a vLLM simulator of role with KV connector conn (sim.ConnectorNixl or
// sim.ConnectorMooncake).
func vllmSim(t *testing.T, role, conn string) *sim.Server {
	t.Helper()
	return fleet.StartSim(t, sim.Config{Engine: sim.EngineVLLM, Role: role, KVConnector: conn})
}

// gateway starts an in-process gateway with no startup workers under pairing mode (""
// keeps the default, lenient). It records the gateway's warn-level log lines in logs.
func gateway(t *testing.T, mode string, edit ...func(*config.Config)) (*fleet.Gateway, *logSink) {
	t.Helper()
	cfg := fleet.DefaultConfig()
	if mode != "" {
		cfg.PairingMode = mode
	}
	for _, e := range edit {
		e(&cfg)
	}
	logs := &logSink{}
	g := fleet.StartGateway(t, cfg, fx.Decorate(func(*slog.Logger) *slog.Logger { return slog.New(logs) }))
	return g, logs
}

// register POSTs fleet.WorkerSpec(s) to /workers with the extra fields merged in (a nil
// value deletes a field, e.g. "kv_connector": nil registers a vLLM worker by URL alone).
func register(t *testing.T, g *fleet.Gateway, s *sim.Server, extra map[string]any) {
	t.Helper()
	body := fleet.WorkerSpec(s)
	for k, v := range extra {
		if v == nil {
			delete(body, k)
			continue
		}
		body[k] = v
	}
	g.Register(t, body)
}

// waitDetected waits until n workers are ready and each shows the engine version that
// detection copies from the engine (the `version` label), so that the pairing keys the
// suite asserts are the detected ones. (Before 8ea1327 the health checker could make a
// worker ready before the registry had detected it; the first request then saw a decode
// with an unknown runtime, "[?/?/?]" in the no_compatible_pd_pair message.)
func waitDetected(t *testing.T, g *fleet.Gateway, n int) {
	t.Helper()
	g.WaitWorkers(t, n)
	deadline := time.Now().Add(fleet.ReadyTimeout)
	for {
		ws := workers(t, g)
		done := len(ws) == n
		for _, w := range ws {
			done = done && w.IsHealthy && w.Labels[wire.LabelVersion] != "" && w.RuntimeType != "unspecified"
		}
		if done {
			return
		}
		require.False(t, time.Now().After(deadline), "workers not detected within %s: %+v", fleet.ReadyTimeout, ws)
		time.Sleep(20 * time.Millisecond)
	}
}

// workerInfo is a GET /workers entry with the fields this suite reads.
type workerInfo struct {
	URL         string            `json:"url"`
	WorkerType  string            `json:"worker_type"`
	RuntimeType string            `json:"runtime_type"`
	IsHealthy   bool              `json:"is_healthy"`
	Labels      map[string]string `json:"labels"`
	PDPairing   string            `json:"pd_pairing"`
}

func workers(t *testing.T, g *fleet.Gateway) []workerInfo {
	t.Helper()
	r := g.Get(t, "/workers")
	require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
	var l struct {
		Workers []workerInfo `json:"workers"`
	}
	require.NoError(t, json.Unmarshal(r.Body, &l))
	return l.Workers
}

// pairingKeys maps each worker URL to its pd_pairing key.
func pairingKeys(t *testing.T, g *fleet.Gateway) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, w := range workers(t, g) {
		out[w.URL] = w.PDPairing
	}
	return out
}

// completion is a /v1/completions body for prompt with maxTokens output tokens.
func completion(prompt string, maxTokens int, stream bool) map[string]any {
	b := map[string]any{"model": model, "prompt": prompt, "max_tokens": maxTokens}
	if stream {
		b["stream"] = true
	}
	return b
}

// completionText reads choices[0].text of a non-streaming /v1/completions answer.
func completionText(t *testing.T, r *fleet.Response) string {
	t.Helper()
	var v struct {
		Choices []struct {
			Text string `json:"text"`
		} `json:"choices"`
	}
	require.NoError(t, json.Unmarshal(r.Body, &v), "%s", r.Body)
	require.Len(t, v.Choices, 1, "%s", r.Body)
	return v.Choices[0].Text
}

// requireNoPair asserts that r is the seed's 503 no_compatible_pd_pair with exactly the
// message want: status, X-SMG-Error-Code, Content-Type and the exact body
// {"error":{"type":"server_error","code":...,"message":...,"param":null}}.
func requireNoPair(t *testing.T, r *fleet.Response, want string) {
	t.Helper()
	require.Equal(t, http.StatusServiceUnavailable, r.Status, "%s", r.Body)
	assert.Equal(t, wire.CodeNoCompatiblePDPair, r.Header.Get(wire.HeaderErrorCode))
	assert.Equal(t, "application/json", r.Header.Get("Content-Type"))
	assert.Empty(t, r.Header.Get(wire.HeaderRetryAfter), "not a shed: no Retry-After")
	assert.Equal(t, map[string]any{"error": map[string]any{
		"type":    "server_error",
		"code":    "no_compatible_pd_pair",
		"message": want,
		"param":   nil,
	}}, r.Object(t))
}

// explain is the message of a one-prefill, one-decode no_compatible_pd_pair (seed "Explicit
// Pairing Protocol": it names the components that differ and each leg's key).
// Workers are named by their gateway id, never by address.
func explain(t *testing.T, g *fleet.Gateway, p, d *sim.Server, pKey, dKey, diffs string) string {
	id := func(s *sim.Server) string {
		for _, w := range g.Workers(t) {
			if w.URL == s.URL() {
				return w.ID
			}
		}
		return "no worker at " + s.URL()
	}
	return fmt.Sprintf("%s: prefill %s [%s] vs decode %s [%s] differ in %s", seedPrefix, id(p), pKey, id(d), dKey, diffs)
}

// waitStats polls until cond holds for the sims' counters (a Mooncake prefill counts
// handoffs_sent when the decode's fetch completes, after the answer), at most 5 s.
func waitStats(t *testing.T, cond func() bool, msg string, args ...any) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out: "+msg, args...)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// sendAll sends n bodies (body(i)) concurrently, at most 16 at a time, and returns the
// answers in order. Bounded by fleet.RequestTimeout per request.
func sendAll(t *testing.T, g *fleet.Gateway, path string, n int, body func(i int) map[string]any) []*fleet.Response {
	t.Helper()
	out := make([]*fleet.Response, n)
	errs := make([]error, n)
	sem := make(chan struct{}, 16)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			out[i], errs[i] = g.Send(context.Background(), path, fleet.Encode(t, body(i)), nil)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		require.NoError(t, err, "request %d", i)
	}
	return out
}

// logSink is a slog.Handler keeping the messages of warn-level and higher records.
type logSink struct {
	mu   sync.Mutex
	msgs []string
}

func (l *logSink) Enabled(_ context.Context, lv slog.Level) bool { return lv >= slog.LevelWarn }

func (l *logSink) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.msgs = append(l.msgs, r.Message)
	return nil
}

func (l *logSink) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *logSink) WithGroup(string) slog.Handler      { return l }

// warned reports whether a warn-level message starting with prefix was logged.
func (l *logSink) warned(prefix string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, m := range l.msgs {
		if strings.HasPrefix(m, prefix) {
			out = append(out, m)
		}
	}
	return out
}
