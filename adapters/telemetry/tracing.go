package telemetry

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"strings"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/smg-go/smg/app/version"
)

// Tracing is the process's tracer provider and how to flush it.
type Tracing struct {
	// Provider is an SDK provider exporting over OTLP/HTTP, or a no-op provider.
	Provider trace.TracerProvider
	// Exporting reports whether spans leave the process (an OTLP endpoint is configured).
	Exporting bool
	// Protocol is the OTLP protocol when Exporting: "grpc" or "http/protobuf".
	Protocol string
	shutdown func(context.Context) error
}

// Shutdown flushes buffered spans and stops the exporter; a no-op without one. ctx bounds it.
func (t *Tracing) Shutdown(ctx context.Context) error {
	if t.shutdown == nil {
		return nil
	}
	return t.shutdown(ctx)
}

// Propagator is the W3C trace-context (plus baggage) propagator used on every hop.
func Propagator() propagation.TextMapPropagator {
	return propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})
}

// NewTracing builds the tracer provider from the standard OpenTelemetry environment:
// an OTLP exporter (batching; gRPC or HTTP/protobuf per OTEL_EXPORTER_OTLP[_TRACES]_PROTOCOL,
// default http/protobuf) when OTEL_EXPORTER_OTLP_ENDPOINT or
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is set and OTEL_SDK_DISABLED is not "true"; a no-op
// provider otherwise. The exporter reads the other OTEL_EXPORTER_OTLP_* variables (headers,
// timeout, protocol details) itself, the sampler follows OTEL_TRACES_SAMPLER, and the
// resource takes OTEL_SERVICE_NAME / OTEL_RESOURCE_ATTRIBUTES (service.name defaults to
// "smg"). The exporter connects lazily, so no collector is needed to start.
func NewTracing(ctx context.Context, getenv func(string) string) (*Tracing, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	if strings.EqualFold(getenv("OTEL_SDK_DISABLED"), "true") ||
		(getenv("OTEL_EXPORTER_OTLP_ENDPOINT") == "" && getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") == "") {
		return &Tracing{Provider: noop.NewTracerProvider()}, nil
	}
	exp, proto, err := newOTLPExporter(ctx, getenv)
	if err != nil {
		return nil, err
	}
	res, err := resource.New(ctx,
		resource.WithAttributes(
			attribute.String("service.name", "smg"),
			attribute.String("service.version", version.Version),
		),
		resource.WithFromEnv(),
		resource.WithTelemetrySDK(),
	)
	if err != nil {
		return nil, fmt.Errorf("telemetry: resource from OTEL_RESOURCE_ATTRIBUTES: %w", err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	return &Tracing{Provider: tp, Exporting: true, Protocol: proto, shutdown: tp.Shutdown}, nil
}

// InjectHeaders writes the trace context of ctx (traceparent, tracestate, baggage) into h.
// Call it on every request to an engine so the engine's spans join the client's trace.
// It uses Propagator() directly, so it works whether or not the globals were installed.
func InjectHeaders(ctx context.Context, h http.Header) {
	propagator.Inject(ctx, propagation.HeaderCarrier(h))
}

var propagator = Propagator()

// Install makes t.Provider and Propagator() the process-wide OpenTelemetry globals, which
// libraries (otelhttp, the engine client) pick up.
func (t *Tracing) Install() {
	otel.SetTracerProvider(t.Provider)
	otel.SetTextMapPropagator(propagator)
}
