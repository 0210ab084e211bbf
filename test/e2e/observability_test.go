package e2e_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/fx"

	"github.com/smg-go/smg/adapters/telemetry"
	"github.com/smg-go/smg/app/config"
	"github.com/smg-go/smg/domain/wire"
	"github.com/smg-go/smg/test/fleet"
)

// lockedBuffer is the gateway's log sink: the server writes while the test reads.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// records returns the JSON log records whose msg is msg.
func (l *lockedBuffer) records(t *testing.T, msg string) []map[string]any {
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

// obsGateway is an SGLang 1P+1D fleet of Recorders (which keep every leg's headers) behind a
// gateway logging JSON at info into logs and tracing into an in-memory exporter.
type obsGateway struct {
	g               *fleet.Gateway
	prefill, decode *fleet.Recorder
	spans           *tracetest.InMemoryExporter
	logs            *lockedBuffer
}

func startObsGateway(t *testing.T, decode fleet.Respond) *obsGateway {
	t.Helper()
	o := &obsGateway{spans: tracetest.NewInMemoryExporter(), logs: &lockedBuffer{}}
	o.prefill = fleet.NewRecorder(t, "sglang", model, nil)
	o.decode = fleet.NewRecorder(t, "sglang", model, decode)
	cfg := fleet.DefaultConfig()
	cfg.LogLevel = "info"
	port := 8998
	cfg.Prefill = []config.PrefillSpec{{URL: o.prefill.URL, BootstrapPort: &port}}
	cfg.Decode = []string{o.decode.URL}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(o.spans))
	t.Cleanup(func() { _ = tp.Shutdown(t.Context()) })
	o.g = fleet.StartGateway(t, cfg,
		fx.Decorate(func(trace.TracerProvider) trace.TracerProvider { return tp }),
		fx.Decorate(func(*slog.Logger) *slog.Logger {
			return telemetry.NewLogger(telemetry.LogOptions{Level: cfg.LogLevel, Format: cfg.LogFormat, JSON: cfg.LogJSON}, o.logs)
		}),
	)
	o.g.WaitWorkers(t, 2)
	return o
}

func (o *obsGateway) workerID(t *testing.T, url string) string {
	t.Helper()
	for _, w := range o.g.Workers(t) {
		if w.URL == url {
			return w.ID
		}
	}
	t.Fatalf("no worker %s", url)
	return ""
}

func chatStream(w http.ResponseWriter, _ *http.Request, body []byte) {
	if !bytes.Contains(body, []byte(`"stream":true`)) {
		fleet.WriteJSON(w, http.StatusOK, `{"id":"x","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}]}`)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write([]byte("data: {\"id\":\"x\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hi\"}}]}\n\n"))
	w.(http.Flusher).Flush()
	_, _ = w.Write([]byte("data: [DONE]\n\n"))
}

func spanAttrs(s tracetest.SpanStub) map[attribute.Key]attribute.Value {
	m := map[attribute.Key]attribute.Value{}
	for _, kv := range s.Attributes {
		m[kv.Key] = kv.Value
	}
	return m
}

// A PD request: the RED series under SMG's names with the route pattern as path, a server
// span named by route with prefill and decode child spans (worker, runtime, handoff mode,
// room, TTFT), one INFO access line with request id, trace id and both worker ids; the
// gateway-minted request id stays the gateway's (as in SMG, no engine leg gets it as
// X-Request-Id: an engine would build its own response id on it).
func TestPDRequestIsMeasuredTracedAndLogged(t *testing.T) {
	t.Parallel()
	o := startObsGateway(t, chatStream)
	pid, did := o.workerID(t, o.prefill.URL), o.workerID(t, o.decode.URL)

	r := o.g.Post(t, "/v1/chat/completions", map[string]any{"model": model, "stream": true,
		"messages": []map[string]any{{"role": "user", "content": "hello"}}}, nil)
	require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
	reqID := r.Header.Get(wire.HeaderRequestID)
	require.True(t, strings.HasPrefix(reqID, "chatcmpl-"), "minted id %q", reqID)

	// Neither engine received the gateway's request id.
	// Nothing waits for the prefill before the decode's answer is relayed, so under load its
	// request may reach the recorder after the client has the whole response.
	for name, rec := range map[string]*fleet.Recorder{"prefill": o.prefill, "decode": o.decode} {
		require.Eventually(t, func() bool { return len(rec.Requests()) >= 1 }, 5*time.Second, 10*time.Millisecond, name)
		reqs := rec.Requests()
		require.Len(t, reqs, 1, name)
		assert.Empty(t, reqs[0].Header.Values(wire.HeaderRequestID), name)
	}

	// Spans: the server span is named by route; prefill and decode are its children.
	var server, prefill, decode *tracetest.SpanStub
	require.Eventually(t, func() bool { // the decode span ends when the relay closes its body
		server, prefill, decode = nil, nil, nil
		for _, s := range o.spans.GetSpans() {
			switch s.Name {
			case "POST /v1/chat/completions":
				server = &s
			case "prefill":
				prefill = &s
			case "decode":
				decode = &s
			}
		}
		return server != nil && prefill != nil && decode != nil
	}, 5*time.Second, 10*time.Millisecond, "spans: %v", o.spans.GetSpans())
	assert.Equal(t, "/v1/chat/completions", spanAttrs(*server)["http.route"].AsString())
	for _, leg := range []*tracetest.SpanStub{prefill, decode} {
		assert.Equal(t, server.SpanContext.SpanID(), leg.Parent.SpanID(), leg.Name)
		assert.Equal(t, server.SpanContext.TraceID(), leg.SpanContext.TraceID(), leg.Name)
		a := spanAttrs(*leg)
		assert.Equal(t, "sglang", a[telemetry.AttrRuntime].AsString(), leg.Name)
		assert.Equal(t, "bootstrap", a[telemetry.AttrKVMode].AsString(), leg.Name)
		assert.Equal(t, "ok", a[telemetry.AttrOutcome].AsString(), leg.Name)
		assert.Equal(t, int64(200), a[telemetry.AttrStatus].AsInt64(), leg.Name)
	}
	pa, da := spanAttrs(*prefill), spanAttrs(*decode)
	assert.Equal(t, pid, pa[telemetry.AttrWorkerID].AsString())
	assert.Equal(t, did, da[telemetry.AttrWorkerID].AsString())
	assert.NotEmpty(t, pa[telemetry.AttrBootstrapRoom].AsString())
	assert.Equal(t, pa[telemetry.AttrBootstrapRoom], da[telemetry.AttrBootstrapRoom], "one room on both legs")
	ttft := da[telemetry.AttrTTFTMS].AsFloat64()
	assert.Greater(t, ttft, 0.0, "decode span carries TTFT")
	assert.LessOrEqual(t, da[telemetry.AttrFirstByteMS].AsFloat64(), ttft, "leg first byte is within the TTFT")

	// One INFO access line, joined to the trace and both workers.
	var line map[string]any
	require.Eventually(t, func() bool {
		for _, l := range o.logs.records(t, "request") {
			if l["route"] == "/v1/chat/completions" {
				line = l
				return true
			}
		}
		return false
	}, 5*time.Second, 10*time.Millisecond)
	assert.Equal(t, "INFO", line["level"])
	assert.Equal(t, reqID, line["request_id"])
	assert.Equal(t, server.SpanContext.TraceID().String(), line["trace_id"])
	assert.Equal(t, server.SpanContext.SpanID().String(), line["span_id"], "the server span, for Cloud Logging's spanId")
	assert.Equal(t, server.SpanContext.IsSampled(), line["trace_sampled"])
	assert.Equal(t, pid, line["prefill_worker"])
	assert.Equal(t, did, line["decode_worker"])
	assert.Equal(t, float64(1), line["attempts"])
	assert.Equal(t, float64(200), line["status"])
	assert.Equal(t, "ok", line["outcome"])
	assert.Equal(t, model, line["model"])
	assert.Equal(t, true, line["stream"])
	assert.Greater(t, line["ttft_ms"], 0.0)

	// RED series: path is the route pattern; /generate has model="unknown".
	g := o.g.Post(t, "/generate", map[string]any{"text": "hello"}, nil)
	require.Equal(t, http.StatusOK, g.Status, "%s", g.Body)
	nf := o.g.Post(t, "/v1/no/such/route/12345", map[string]any{}, nil)
	require.Equal(t, http.StatusNotFound, nf.Status)
	m := o.g.Metrics(t)
	assert.Equal(t, 1.0, m.Sum("smg_http_requests_total", "method", "POST", "path", "/v1/chat/completions"))
	assert.Equal(t, 1.0, m.Sum("smg_http_request_duration_seconds_count", "method", "POST", "path", "/v1/chat/completions"))
	assert.Equal(t, 1.0, m.Sum("smg_http_responses_total", "path", "/v1/chat/completions", "status_code", "200", "error_code", ""))
	assert.Equal(t, 1.0, m.Sum("smg_http_requests_total", "method", "POST", "path", "unmatched"), "raw URLs never become labels")
	assert.False(t, m.Has("smg_http_requests_total", "path", "/v1/no/such/route/12345"))
	assert.Equal(t, 1.0, m.Sum("smg_router_requests_total", "router_type", "http", "backend_type", "pd",
		"connection_mode", "http", "model", model, "endpoint", "chat", "streaming", "true"))
	assert.Equal(t, 1.0, m.Sum("smg_router_requests_total", "model", "unknown", "endpoint", "generate", "streaming", "false"))
	assert.Equal(t, 1.0, m.Sum("smg_router_request_duration_seconds_count", "model", "unknown", "endpoint", "generate"))
	assert.False(t, m.Has("smg_router_requests_total", "model", ""), `no model="" series`)
	assert.GreaterOrEqual(t, m.Sum("smg_http_connections_active"), 1.0, "the scrape's own connection is open")
	assert.Equal(t, 1.0, m.Sum("smg_worker_pool_size", "worker_type", "prefill", "connection_mode", "http", "model", model))
	assert.Equal(t, 1.0, m.Sum("smg_worker_pool_size", "worker_type", "decode", "connection_mode", "http", "model", model))
	assert.Equal(t, 1.0, m.Sum("smg_workers_ready", "worker_type", "prefill"))
	assert.Equal(t, 1.0, m.Sum("smg_workers_ready", "worker_type", "decode"))
}

// A decode that answers 500: the response series carry the status and error code, the
// router error series the error_type, the worker series the failing leg; the access line
// says server_error and counts the attempts.
func TestFailedPDRequestIsCountedAsAnError(t *testing.T) {
	t.Parallel()
	o := startObsGateway(t, func(w http.ResponseWriter, _ *http.Request, _ []byte) {
		fleet.WriteJSON(w, http.StatusInternalServerError, `{"error":{"message":"engine exploded"}}`)
	})
	r := o.g.Post(t, "/v1/completions", map[string]any{"model": model, "prompt": "hello"}, nil)
	require.GreaterOrEqual(t, r.Status, 500, "%s", r.Body)
	code := r.Header.Get(wire.HeaderErrorCode)
	require.NotEmpty(t, code)

	m := o.g.Metrics(t)
	assert.Equal(t, 1.0, m.Sum("smg_http_responses_total", "path", "/v1/completions", "status_code", itoa(r.Status), "error_code", code))
	assert.Equal(t, 1.0, m.Sum("smg_router_request_errors_total", "endpoint", "completions", "model", model, "error_type", "backend_error"))
	attempts := len(o.decode.Requests())
	require.GreaterOrEqual(t, attempts, 1)
	assert.Equal(t, 1.0, m.Sum("smg_worker_errors_total", "worker_type", "decode", "connection_mode", "http", "error_type", "backend_error"),
		"the decode's repeated failure is counted once for the request")

	var line map[string]any
	require.Eventually(t, func() bool {
		for _, l := range o.logs.records(t, "request") {
			if l["route"] == "/v1/completions" {
				line = l
				return true
			}
		}
		return false
	}, 5*time.Second, 10*time.Millisecond)
	assert.Equal(t, "server_error", line["outcome"])
	assert.Equal(t, code, line["error_code"])
	assert.Equal(t, float64(attempts), line["attempts"])
	assert.Equal(t, r.Header.Get(wire.HeaderRequestID), line["request_id"])

	// The retry lines of the same request carry its request id and trace id.
	require.Greater(t, attempts, 1, "a decode 500 is retried")
	retries := o.logs.records(t, "PD attempt failed; retrying with a new pair")
	require.NotEmpty(t, retries)
	for _, l := range retries {
		assert.Equal(t, line["request_id"], l["request_id"])
		assert.Equal(t, line["trace_id"], l["trace_id"])
		assert.NotEmpty(t, l["trace_id"])
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }
