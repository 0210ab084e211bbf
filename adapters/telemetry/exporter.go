package telemetry

import (
	"context"
	"fmt"
	"strings"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// OTLP protocols (the standard OTEL_EXPORTER_OTLP_PROTOCOL values the Go SDK implements).
const (
	ProtocolGRPC         = "grpc"
	ProtocolHTTPProtobuf = "http/protobuf"
)

// otlpProtocol is OTEL_EXPORTER_OTLP_TRACES_PROTOCOL, else OTEL_EXPORTER_OTLP_PROTOCOL, else
// http/protobuf (the specification's default). http/json is not implemented by the Go
// exporters and is refused with an error naming the variable.
func otlpProtocol(getenv func(string) string) (string, error) {
	name, v := "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"))
	if v == "" {
		name, v = "OTEL_EXPORTER_OTLP_PROTOCOL", strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_PROTOCOL"))
	}
	switch strings.ToLower(v) {
	case "", ProtocolHTTPProtobuf:
		return ProtocolHTTPProtobuf, nil
	case ProtocolGRPC:
		return ProtocolGRPC, nil
	}
	return "", fmt.Errorf("telemetry: %s=%q: expected grpc or http/protobuf", name, v)
}

// newOTLPExporter builds the span exporter for the configured protocol. Both exporters read
// the other OTEL_EXPORTER_OTLP_* variables (endpoint, headers, timeout, TLS) themselves and
// connect lazily, so no collector is needed to start.
func newOTLPExporter(ctx context.Context, getenv func(string) string) (sdktrace.SpanExporter, string, error) {
	proto, err := otlpProtocol(getenv)
	if err != nil {
		return nil, "", err
	}
	var exp sdktrace.SpanExporter
	if proto == ProtocolGRPC {
		exp, err = otlptracegrpc.New(ctx)
	} else {
		exp, err = otlptracehttp.New(ctx)
	}
	if err != nil {
		return nil, "", fmt.Errorf("telemetry: OTLP trace exporter (%s, OTEL_EXPORTER_OTLP_*): %w", proto, err)
	}
	return exp, proto, nil
}
