package telemetry_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/smg-go/smg/adapters/telemetry"
	"github.com/smg-go/smg/domain/worker"
	"github.com/smg-go/smg/ports"
)

// With tracing off the legs get no span, but the RequestInfo still learns the legs' workers
// and the decode's time to first token (the access log's ttft_ms).
func TestUntracedLegsKeepTheRequestInfo(t *testing.T) {
	ri := &ports.RequestInfo{Start: time.Now().Add(-50 * time.Millisecond)}
	ctx := ports.WithRequestInfo(context.Background(), ri)
	legs := telemetry.TraceLegs(fakeBodies{}, nil)
	for _, role := range []worker.Role{worker.RolePrefill, worker.RoleDecode} {
		w := worker.NewLive(worker.Worker{ID: string(role) + "-0", URL: "http://127.0.0.1:1", Role: role, Runtime: worker.RuntimeSGLang}, worker.StatusReady)
		resp, err := legs.Send(ctx, ports.LegRequest{Worker: w, Path: "/generate"})
		require.NoError(t, err)
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		assert.Equal(t, "data", string(b))
		require.NoError(t, resp.Body.Close())
	}
	s := ri.Snapshot()
	assert.Equal(t, "prefill-0", s.PrefillID)
	assert.Equal(t, "decode-0", s.DecodeID)
	assert.GreaterOrEqual(t, s.TTFT, 50*time.Millisecond, "the decode's first byte is timed from the request's start")
}

type fakeBodies struct{}

func (fakeBodies) Send(context.Context, ports.LegRequest) (*ports.LegResponse, error) {
	return &ports.LegResponse{Status: 200, Body: io.NopCloser(strings.NewReader("data"))}, nil
}

// BenchmarkTraceLegsOff is one prefill and one decode leg through TraceLegs with tracing off
// (the default): the allocations the wrapper adds per PD request.
func BenchmarkTraceLegsOff(b *testing.B) {
	ri := &ports.RequestInfo{Start: time.Now()}
	ctx := ports.WithRequestInfo(context.Background(), ri)
	legs := telemetry.TraceLegs(staticBody{}, nil)
	p := worker.NewLive(worker.Worker{ID: "p", URL: "http://127.0.0.1:1", Role: worker.RolePrefill}, worker.StatusReady)
	d := worker.NewLive(worker.Worker{ID: "d", URL: "http://127.0.0.1:2", Role: worker.RoleDecode}, worker.StatusReady)
	buf := make([]byte, 16)
	b.ReportAllocs()
	for b.Loop() {
		for _, w := range []*worker.Live{p, d} {
			resp, _ := legs.Send(ctx, ports.LegRequest{Worker: w, Path: "/generate"})
			_, _ = resp.Body.Read(buf)
			_ = resp.Body.Close()
		}
	}
}

// staticBody answers with one shared body that never ends (no allocation of its own).
type staticBody struct{}

var shared = &ports.LegResponse{Status: 200}

func (staticBody) Send(context.Context, ports.LegRequest) (*ports.LegResponse, error) {
	r := *shared
	r.Body = endless{}
	return &r, nil
}

type endless struct{}

func (endless) Read(p []byte) (int, error) { return copy(p, "x"), nil }
func (endless) Close() error               { return nil }

// BenchmarkMiddlewareTracingOff is one request through the request-id middleware and the
// route recorder with tracing off (a no-op provider, the default): the allocations they add.
func BenchmarkMiddlewareTracingOff(b *testing.B) {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/completions", func(http.ResponseWriter, *http.Request) {})
	h := telemetry.NewMiddleware(slog.New(slog.DiscardHandler), noop.NewTracerProvider())(telemetry.RecordRoute(mux))
	req := httptest.NewRequest(http.MethodPost, "/v1/completions", nil)
	req.Header.Set("X-Request-Id", "rid-1")
	w := httptest.NewRecorder()
	b.ReportAllocs()
	for b.Loop() {
		clear(w.Header())
		h.ServeHTTP(w, req)
	}
}

// A prefill or regular worker serving a request alone (selective PD: LegRequest.Leg
// "decode") is the decode leg: the access line names it as the decode worker, no prefill
// worker, and its first byte is the request's TTFT.
func TestALoneWorkerIsTheDecodeLeg(t *testing.T) {
	for _, role := range []worker.Role{worker.RolePrefill, worker.RoleRegular} {
		ri := &ports.RequestInfo{Start: time.Now().Add(-50 * time.Millisecond)}
		ctx := ports.WithRequestInfo(context.Background(), ri)
		w := worker.NewLive(worker.Worker{ID: string(role) + "-0", URL: "http://127.0.0.1:1", Role: role, Runtime: worker.RuntimeVLLM}, worker.StatusReady)
		resp, err := telemetry.TraceLegs(fakeBodies{}, nil).Send(ctx, ports.LegRequest{Worker: w, Path: "/v1/completions", Leg: "decode"})
		require.NoError(t, err)
		_, err = io.ReadAll(resp.Body)
		require.NoError(t, err)
		require.NoError(t, resp.Body.Close())
		s := ri.Snapshot()
		assert.Empty(t, s.PrefillID, role)
		assert.Equal(t, string(role)+"-0", s.DecodeID, role)
		assert.GreaterOrEqual(t, s.TTFT, 50*time.Millisecond, role)
	}
}
