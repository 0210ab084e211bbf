package telemetry_test

import (
	"context"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/grpc"

	"github.com/smg-go/smg/adapters/telemetry"
)

// collector is an OTLP/gRPC trace receiver on 127.0.0.1 that keeps the span names.
type collector struct {
	coltrace.UnimplementedTraceServiceServer
	mu    sync.Mutex
	names []string
}

func (c *collector) Export(_ context.Context, req *coltrace.ExportTraceServiceRequest) (*coltrace.ExportTraceServiceResponse, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, rs := range req.GetResourceSpans() {
		for _, ss := range rs.GetScopeSpans() {
			for _, s := range ss.GetSpans() {
				c.names = append(c.names, s.GetName())
			}
		}
	}
	return &coltrace.ExportTraceServiceResponse{}, nil
}

func (c *collector) got() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.names...)
}

// OTEL_EXPORTER_OTLP_PROTOCOL=grpc sends spans over OTLP/gRPC (not parallel: the exporter
// reads the process environment).
func TestTracingExportsOverGRPCWhenAsked(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := grpc.NewServer()
	c := &collector{}
	coltrace.RegisterTraceServiceServer(srv, c)
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(srv.Stop)

	env := map[string]string{
		"OTEL_EXPORTER_OTLP_ENDPOINT": "http://" + ln.Addr().String(),
		"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc",
		"OTEL_EXPORTER_OTLP_INSECURE": "true",
	}
	for k, v := range env {
		t.Setenv(k, v)
	}
	tr, err := telemetry.NewTracing(context.Background(), func(k string) string { return env[k] })
	require.NoError(t, err)
	require.True(t, tr.Exporting)
	assert.Equal(t, telemetry.ProtocolGRPC, tr.Protocol)
	_, span := tr.Provider.Tracer("test").Start(context.Background(), "POST /v1/chat/completions")
	span.End()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, tr.Shutdown(ctx)) // flushes the batch
	assert.Equal(t, []string{"POST /v1/chat/completions"}, c.got())
}

func TestTracingProtocolFromEnvironment(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		env     map[string]string
		want    string
		wantErr string
	}{
		{map[string]string{}, telemetry.ProtocolHTTPProtobuf, ""},
		{map[string]string{"OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf"}, telemetry.ProtocolHTTPProtobuf, ""},
		{map[string]string{"OTEL_EXPORTER_OTLP_PROTOCOL": "GRPC"}, telemetry.ProtocolGRPC, ""},
		{map[string]string{"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/protobuf"}, telemetry.ProtocolHTTPProtobuf, ""},
		{map[string]string{"OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"}, "", "OTEL_EXPORTER_OTLP_PROTOCOL"},
		{map[string]string{"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "udp"}, "", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"},
	} {
		env := map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9"}
		for k, v := range tc.env {
			env[k] = v
		}
		tr, err := telemetry.NewTracing(context.Background(), func(k string) string { return env[k] })
		if tc.wantErr != "" {
			require.Error(t, err, tc.env)
			assert.Contains(t, err.Error(), tc.wantErr)
			continue
		}
		require.NoError(t, err, tc.env)
		assert.Equal(t, tc.want, tr.Protocol, tc.env)
		require.NoError(t, tr.Shutdown(context.Background()))
	}
}
