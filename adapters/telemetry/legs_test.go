package telemetry_test

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/smg-go/smg/adapters/telemetry"
	"github.com/smg-go/smg/domain/worker"
	"github.com/smg-go/smg/ports"
)

// fakeEngine answers every leg with resp or err.
type fakeEngine struct {
	resp *ports.LegResponse
	err  error
}

func (f fakeEngine) Send(context.Context, ports.LegRequest) (*ports.LegResponse, error) {
	return f.resp, f.err
}

// brokenBody yields "data" then fails.
type brokenBody struct{ sent bool }

func (b *brokenBody) Read(p []byte) (int, error) {
	if !b.sent {
		b.sent = true
		return copy(p, "data"), nil
	}
	return 0, errors.New("connection reset")
}
func (b *brokenBody) Close() error { return nil }

func legSpan(t *testing.T, eng ports.EngineClient, role worker.Role, body string, read func(io.Reader), ctx context.Context) (tracetest.SpanStub, *ports.RequestInfo) {
	t.Helper()
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	ri := &ports.RequestInfo{Start: time.Now()}
	ctx = ports.WithRequestInfo(ctx, ri)
	w := worker.NewLive(worker.Worker{ID: "w1", URL: "http://127.0.0.1:1", Role: role, Runtime: worker.RuntimeSGLang}, worker.StatusReady)
	resp, err := telemetry.TraceLegs(eng, tp).Send(ctx, ports.LegRequest{Worker: w, Path: "/generate", Body: []byte(body)})
	if err == nil {
		read(resp.Body)
		require.NoError(t, resp.Body.Close())
	}
	spans := exp.GetSpans()
	require.Len(t, spans, 1)
	return spans[0], ri
}

func attrs(s tracetest.SpanStub) map[attribute.Key]attribute.Value {
	m := map[attribute.Key]attribute.Value{}
	for _, kv := range s.Attributes {
		m[kv.Key] = kv.Value
	}
	return m
}

func readAll(r io.Reader) { _, _ = io.ReadAll(r) }

func TestLegSpanOutcomes(t *testing.T) {
	t.Parallel()
	ok := func() *ports.LegResponse {
		return &ports.LegResponse{Status: 200, Body: io.NopCloser(strings.NewReader(`{"text":"x"}`))}
	}
	room := `{"text":"hi","bootstrap_room":42,"bootstrap_port":8998}`

	s, ri := legSpan(t, fakeEngine{resp: ok()}, worker.RoleDecode, room, readAll, context.Background())
	a := attrs(s)
	assert.Equal(t, "decode", s.Name)
	assert.Equal(t, "ok", a[telemetry.AttrOutcome].AsString())
	assert.Equal(t, "bootstrap", a[telemetry.AttrKVMode].AsString())
	assert.Equal(t, "42", a[telemetry.AttrBootstrapRoom].AsString())
	assert.Greater(t, a[telemetry.AttrTTFTMS].AsFloat64(), 0.0)
	snap := ri.Snapshot()
	assert.Equal(t, "w1", snap.DecodeID)
	assert.Greater(t, snap.TTFT, time.Duration(0), "TTFT reaches the access log")

	s, ri = legSpan(t, fakeEngine{resp: &ports.LegResponse{Status: 503, Body: io.NopCloser(strings.NewReader(`{}`))}},
		worker.RolePrefill, room, readAll, context.Background())
	assert.Equal(t, "prefill", s.Name)
	assert.Equal(t, "http_error", attrs(s)[telemetry.AttrOutcome].AsString())
	assert.Equal(t, codes.Error, s.Status.Code)
	assert.Equal(t, "w1", ri.Snapshot().PrefillID)
	assert.Equal(t, "sglang", ri.Snapshot().Runtime)

	s, _ = legSpan(t, fakeEngine{err: errors.New("connection refused")}, worker.RoleDecode, room, nil, context.Background())
	assert.Equal(t, "transport_error", attrs(s)[telemetry.AttrOutcome].AsString())

	s, _ = legSpan(t, fakeEngine{resp: &ports.LegResponse{Status: 200, Body: &brokenBody{}}}, worker.RoleDecode, room, readAll, context.Background())
	assert.Equal(t, "body_error", attrs(s)[telemetry.AttrOutcome].AsString())
	assert.Equal(t, codes.Error, s.Status.Code)

	ctx, cancel := context.WithCancel(context.Background())
	s, _ = legSpan(t, fakeEngine{resp: &ports.LegResponse{Status: 200, Body: &brokenBody{}}}, worker.RoleDecode, room,
		func(r io.Reader) { cancel(); readAll(r) }, ctx)
	assert.Equal(t, "cancelled", attrs(s)[telemetry.AttrOutcome].AsString())

	// A 5xx decode is not a first token.
	_, ri = legSpan(t, fakeEngine{resp: &ports.LegResponse{Status: 500, Body: io.NopCloser(strings.NewReader(`{"error":{}}`))}},
		worker.RoleDecode, room, readAll, context.Background())
	assert.Zero(t, ri.Snapshot().TTFT)
}

func TestLegSpanNamesTheVLLMHandoff(t *testing.T) {
	t.Parallel()
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	eng := telemetry.TraceLegs(fakeEngine{resp: &ports.LegResponse{Status: 200, Body: io.NopCloser(strings.NewReader(`{}`))}}, tp)
	for _, tc := range []struct{ connector, body, mode, transfer string }{
		{"MooncakeConnector", `{"kv_transfer_params":{"do_remote_prefill":true,"transfer_id":"xfer-1","remote_bootstrap_addr":"http://h:8998"}}`, "mooncake", "xfer-1"},
		{"NixlConnector", `{"kv_transfer_params":{"do_remote_prefill":true,"remote_engine_id":"e","remote_block_ids":[1]}}`, "nixl", ""},
		{"", `{"prompt":"x"}`, "passthrough", ""},
	} {
		w := worker.NewLive(worker.Worker{ID: "d", Role: worker.RoleDecode, Runtime: worker.RuntimeVLLM, KVConnector: tc.connector}, worker.StatusReady)
		resp, err := eng.Send(context.Background(), ports.LegRequest{Worker: w, Body: []byte(tc.body)})
		require.NoError(t, err)
		readAll(resp.Body)
		require.NoError(t, resp.Body.Close())
		spans := exp.GetSpans()
		a := attrs(spans[len(spans)-1])
		assert.Equal(t, tc.mode, a[telemetry.AttrKVMode].AsString(), tc.connector)
		assert.Equal(t, tc.transfer, a[telemetry.AttrTransferID].AsString(), tc.connector)
	}
}
