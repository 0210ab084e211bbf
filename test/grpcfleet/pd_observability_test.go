package grpcfleet_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"log/slog"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/fx"

	"github.com/smg-go/smg/adapters/telemetry"
	"github.com/smg-go/smg/app/config"
	"github.com/smg-go/smg/domain/text"
	"github.com/smg-go/smg/test/fleet"
	"github.com/smg-go/smg/test/sim/grpcsim"
)

// logSink is the gateway's JSON log: the server writes while the test reads.
type logSink struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logSink) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// records returns the records whose msg is msg.
func (l *logSink) records(t *testing.T, msg string) []map[string]any {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []map[string]any
	sc := bufio.NewScanner(bytes.NewReader(l.b.Bytes()))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var m map[string]any
		require.NoError(t, json.Unmarshal(sc.Bytes(), &m), "log line %s", sc.Text())
		if m["msg"] == msg {
			out = append(out, m)
		}
	}
	return out
}

// accessLine waits for the access line of the request with id reqID.
func (l *logSink) accessLine(t *testing.T, reqID string) map[string]any {
	t.Helper()
	var line map[string]any
	require.Eventually(t, func() bool {
		for _, r := range l.records(t, "request") {
			if r["request_id"] == reqID {
				line = r
				return true
			}
		}
		return false
	}, 5*time.Second, 10*time.Millisecond, "access line of %s", reqID)
	return line
}

// obsPD is pdFleet with the gateway logging JSON at info into the returned sink.
func obsPD(t *testing.T, mod func(role string, c *grpcsim.Config), cfgMod func(*config.Config)) (*fleet.Gateway, *logSink, *grpcsim.Server, *grpcsim.Server) {
	t.Helper()
	m, _ := qwen3(t)
	logs := &logSink{}
	g, p, d := startPD(t, grpcsim.EngineSGLang, mod, func(c *config.Config) {
		c.LogLevel = "info"
		if cfgMod != nil {
			cfgMod(c)
		}
	},
		fx.Decorate(func(r *text.Registry) *text.Registry { r.Put(pdModel, m); return r }),
		fx.Decorate(func(*slog.Logger) *slog.Logger {
			return telemetry.NewLogger(telemetry.LogOptions{Level: "info", JSON: true}, logs)
		}))
	return g, logs, p, d
}

// workerIDs are the gateway's ids of the prefill and decode simulators.
func workerIDs(t *testing.T, g *fleet.Gateway, p, d *grpcsim.Server) (string, string) {
	t.Helper()
	var pid, did string
	for _, w := range g.Workers(t) {
		switch w.URL {
		case p.URL():
			pid = w.ID
		case d.URL():
			did = w.ID
		}
	}
	require.NotEmpty(t, pid)
	require.NotEmpty(t, did)
	return pid, did
}

// A streamed gRPC PD request is logged like an HTTP one: the pair's worker ids, a TTFT, the
// client's request id; the router series say router_type and connection_mode "grpc".
func TestGRPCStreamAccessLineAndRouterSeries(t *testing.T) {
	t.Parallel()
	g, logs, p, d := obsPD(t, nil, nil)
	pid, did := workerIDs(t, g, p, d)
	const reqID = "obs-grpc-stream-1"
	r := g.Post(t, "/v1/chat/completions", map[string]any{"model": pdModel, "stream": true, "max_tokens": 4,
		"messages": []map[string]any{{"role": "user", "content": "hello"}}}, http.Header{"X-Request-Id": {reqID}})
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	_, done := sseData(t, r.Body)
	require.True(t, done, "the stream ends with [DONE]")

	line := logs.accessLine(t, reqID)
	assert.Equal(t, pid, line["prefill_worker"])
	assert.Equal(t, did, line["decode_worker"])
	assert.Equal(t, float64(200), line["status"])
	assert.Equal(t, "ok", line["outcome"])
	assert.Equal(t, true, line["stream"])
	assert.Greater(t, line["ttft_ms"], 0.0)
	assert.LessOrEqual(t, line["ttft_ms"], line["duration_ms"])

	m := g.Metrics(t)
	assert.Equal(t, 1.0, m.Sum("smg_router_requests_total", "router_type", "grpc", "backend_type", "pd",
		"connection_mode", "grpc", "model", pdModel, "endpoint", "chat", "streaming", "true"))
	assert.Equal(t, 1.0, m.Sum("smg_router_request_duration_seconds_count", "router_type", "grpc", "connection_mode", "grpc", "endpoint", "chat"))
	assert.False(t, m.Has("smg_router_requests_total", "connection_mode", "http"), "no request ran on an HTTP pair")
	assert.Equal(t, 1.0, m.Sum("smg_worker_pool_size", "worker_type", "decode", "connection_mode", "grpc", "model", pdModel))
}
