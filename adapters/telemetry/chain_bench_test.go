package telemetry_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/smg-go/smg/adapters/metrics"
	"github.com/smg-go/smg/adapters/telemetry"
)

// BenchmarkAccessAndRED is one request through the server's observability chain as
// app/server.go builds it (the access log at info to a discarded JSON handler, recording
// the RED series from its one capture; the request-id middleware with tracing off; the
// route recorder) around a handler writing a small JSON answer: the CPU and allocations the
// chain adds per request.
func BenchmarkAccessAndRED(b *testing.B) {
	red, err := metrics.NewRED(prometheus.NewRegistry(), nil)
	if err != nil {
		b.Fatal(err)
	}
	log := telemetry.NewLogger(telemetry.LogOptions{Level: "info", JSON: true}, io.Discard)
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/completions", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"id":"cmpl-1","choices":[{"text":"hi"}]}`))
	})
	h := telemetry.RecordRoute(mux)
	h = telemetry.NewMiddleware(log, noop.NewTracerProvider())(h)
	h = telemetry.AccessLog(log, red)(h)
	req := httptest.NewRequest(http.MethodPost, "/v1/completions", nil)
	req.Header.Set("X-Request-Id", "rid-1")
	w := httptest.NewRecorder()
	b.ReportAllocs()
	for b.Loop() {
		clear(w.Header())
		w.Body.Reset()
		h.ServeHTTP(w, req)
	}
}
