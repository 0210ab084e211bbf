package telemetry_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/smg-go/smg/adapters/telemetry"
	"github.com/smg-go/smg/app/config"
)

func serve(t *testing.T, h http.Handler, req *http.Request) *httptest.ResponseRecorder {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

func TestRequestIDIsTakenOrMintedAndEchoed(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, path string
		header     map[string]string
		want       string // exact id, or a regexp when it starts with ^
	}{
		{"X-Request-Id wins", "/v1/chat/completions", map[string]string{"X-Request-Id": "abc", "X-Correlation-Id": "zzz"}, "abc"},
		{"X-Correlation-Id is next", "/workers", map[string]string{"X-Correlation-Id": "corr-1"}, "corr-1"},
		{"Request-Id is last", "/workers", map[string]string{"Request-Id": "r-9"}, "r-9"},
		{"chat completions mint chatcmpl-", "/v1/chat/completions", nil, "^chatcmpl-[A-Za-z0-9]{24}$"},
		{"completions mint cmpl-", "/v1/completions", nil, "^cmpl-[A-Za-z0-9]{24}$"},
		{"generate mints gnt-", "/generate", nil, "^gnt-[A-Za-z0-9]{24}$"},
		{"responses mint resp-", "/v1/responses", nil, "^resp-[A-Za-z0-9]{24}$"},
		{"messages mint msg_", "/v1/messages", nil, "^msg_[A-Za-z0-9]{24}$"},
		{"other routes mint req-", "/workers", nil, "^req-[A-Za-z0-9]{24}$"},
		{"an id with forbidden characters is replaced", "/v1/completions", map[string]string{"X-Request-Id": "a\"b<script>"}, "^cmpl-[A-Za-z0-9]{24}$"},
		{"an overlong id is replaced", "/workers", map[string]string{"X-Request-Id": strings.Repeat("a", 129)}, "^req-[A-Za-z0-9]{24}$"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var seen string
			h := telemetry.NewMiddleware(slog.New(slog.DiscardHandler), nil)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				seen = telemetry.RequestID(r.Context())
			}))
			req := httptest.NewRequest(http.MethodGet, tc.path, nil)
			for k, v := range tc.header {
				req.Header.Set(k, v)
			}
			rec := serve(t, h, req)
			got := rec.Header().Get("X-Request-Id")
			if tc.want[0] == '^' {
				assert.Regexp(t, regexp.MustCompile(tc.want), got)
			} else {
				assert.Equal(t, tc.want, got)
			}
			assert.Equal(t, got, seen, "handler sees the echoed id")
		})
	}
}

func TestServerSpanJoinsIncomingTraceAndIsNamedByRoute(t *testing.T) {
	t.Parallel()
	sr := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sr))
	mux := http.NewServeMux()
	mux.HandleFunc("GET /workers/{id}", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) })
	h := telemetry.NewMiddleware(slog.New(slog.DiscardHandler), tp)(mux)

	req := httptest.NewRequest(http.MethodGet, "/workers/42", nil)
	req.Header.Set("traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
	req.Header.Set("X-Request-Id", "rid-1")
	rec := serve(t, h, req)
	require.Equal(t, http.StatusNoContent, rec.Code)

	spans := sr.Ended()
	require.Len(t, spans, 1)
	s := spans[0]
	assert.Equal(t, "GET /workers/{id}", s.Name())
	assert.Equal(t, "4bf92f3577b34da6a3ce929d0e0e4736", s.SpanContext().TraceID().String())
	assert.Equal(t, "00f067aa0ba902b7", s.Parent().SpanID().String())
	var rid string
	for _, a := range s.Attributes() {
		if a.Key == "smg.request_id" {
			rid = a.Value.AsString()
		}
	}
	assert.Equal(t, "rid-1", rid)
}

func TestAccessLogOnlyAtDebug(t *testing.T) {
	t.Parallel()
	mux := http.NewServeMux()
	mux.HandleFunc("POST /workers", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusAccepted)
		_, _ = w.Write([]byte("hello"))
	})
	for _, level := range []string{"debug", "info"} {
		t.Run(level, func(t *testing.T) {
			var buf bytes.Buffer
			cfg := config.Default()
			cfg.LogLevel = level
			h := telemetry.NewMiddleware(telemetry.NewLogger(telemetry.LogOptions{Level: cfg.LogLevel, Format: cfg.LogFormat, JSON: cfg.LogJSON}, &buf), nil)(mux)
			req := httptest.NewRequest(http.MethodPost, "/workers", nil)
			req.Header.Set("X-Request-Id", "rid-7")
			serve(t, h, req)
			if level != "debug" {
				assert.Empty(t, buf.String())
				return
			}
			var rec map[string]any
			require.NoError(t, json.Unmarshal(buf.Bytes(), &rec))
			assert.Equal(t, "http request", rec["msg"])
			assert.Equal(t, "DEBUG", rec["level"])
			assert.Equal(t, "smg", rec["service"])
			assert.Equal(t, "POST", rec["method"])
			assert.Equal(t, "/workers", rec["path"])
			assert.Equal(t, "POST /workers", rec["route"])
			assert.Equal(t, 202.0, rec["status"])
			assert.Equal(t, 5.0, rec["bytes"])
			assert.Equal(t, "rid-7", rec["request_id"])
		})
	}
}

func TestStreamingWritersStayFlushable(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	cfg := config.Default()
	cfg.LogLevel = "debug" // the access-log wrapper is the one that could hide Flush
	var flushable bool
	h := telemetry.NewMiddleware(telemetry.NewLogger(telemetry.LogOptions{Level: cfg.LogLevel, Format: cfg.LogFormat, JSON: cfg.LogJSON}, &buf), nil)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, flushable = w.(http.Flusher)
	}))
	serve(t, h, httptest.NewRequest(http.MethodGet, "/", nil))
	assert.True(t, flushable)
}

func TestInjectHeadersWritesTraceparent(t *testing.T) {
	t.Parallel()
	tp := sdktrace.NewTracerProvider()
	ctx, span := tp.Tracer("test").Start(context.Background(), "leg")
	defer span.End()
	h := http.Header{}
	telemetry.InjectHeaders(ctx, h)
	sc := span.SpanContext()
	assert.Equal(t, "00-"+sc.TraceID().String()+"-"+sc.SpanID().String()+"-01", h.Get("traceparent"))

	empty := http.Header{}
	telemetry.InjectHeaders(context.Background(), empty)
	assert.Empty(t, empty.Get("traceparent"), "no span, no traceparent")
}

func TestTracingFollowsOTELEnv(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name      string
		env       map[string]string
		exporting bool
	}{
		{"nothing set: no-op", nil, false},
		{"endpoint set: OTLP", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}, true},
		{"traces endpoint set: OTLP", map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://127.0.0.1:4318/v1/traces"}, true},
		{"SDK disabled wins", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318", "OTEL_SDK_DISABLED": "true"}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tr, err := telemetry.NewTracing(context.Background(), func(k string) string { return tc.env[k] })
			require.NoError(t, err)
			assert.Equal(t, tc.exporting, tr.Exporting)
			_, isSDK := tr.Provider.(*sdktrace.TracerProvider)
			assert.Equal(t, tc.exporting, isSDK)
			assert.NoError(t, tr.Shutdown(context.Background()))
		})
	}
}

func TestParseLevel(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]slog.Level{
		"debug": slog.LevelDebug, "INFO": slog.LevelInfo, "warn": slog.LevelWarn, "error": slog.LevelError,
	} {
		assert.Equal(t, want, telemetry.ParseLevel(in), in)
	}
}

func TestRequestIDHeadersAreConfigurable(t *testing.T) {
	t.Parallel()
	h := telemetry.NewMiddleware(slog.New(slog.DiscardHandler), nil, telemetry.WithRequestIDHeaders([]string{"X-My-Id"}))(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	req := httptest.NewRequest(http.MethodGet, "/workers", nil)
	req.Header.Set("X-Request-Id", "ignored")
	req.Header.Set("X-My-Id", "mine-1")
	assert.Equal(t, "mine-1", serve(t, h, req).Header().Get("X-Request-Id"))
}
