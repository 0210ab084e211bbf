package telemetry

import (
	"net/http"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/smg-go/smg/ports"
)

// RecordRoute wraps the gateway's ServeMux (innermost, inside the body limit) and fills the
// request's ports.RequestInfo: the request id and trace id before the handler runs (so the
// dispatcher can forward the id to the engines), the matched route pattern after. It also
// tags the server span with http.route. It passes r itself to mux, so the mux's r.Pattern
// stays visible to the handlers wrapping this one (otelhttp names the span from it).
func RecordRoute(mux http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ri := ports.RequestInfoFrom(r.Context())
		span := trace.SpanFromContext(r.Context())
		var traceID string
		if sc := span.SpanContext(); sc.HasTraceID() {
			traceID = sc.TraceID().String()
			if sc.HasSpanID() {
				ri.SetSpan(sc.SpanID().String(), sc.IsSampled())
			}
		}
		ri.SetIDs(RequestID(r.Context()), traceID)
		mux.ServeHTTP(w, r)
		route := RoutePattern(r.Pattern)
		ri.SetRoute(route)
		if route != "" && span.IsRecording() {
			span.SetAttributes(attribute.String("http.route", route))
		}
	})
}

// RoutePattern is a ServeMux pattern without its method and host: "POST /v1/chat/completions"
// → "/v1/chat/completions". The result is bounded by the set of mounted routes, so it is
// safe as a metric label (the raw URL is not).
func RoutePattern(pattern string) string {
	if i := strings.IndexByte(pattern, ' '); i >= 0 {
		pattern = strings.TrimLeft(pattern[i+1:], " ")
	}
	if i := strings.IndexByte(pattern, '/'); i > 0 {
		pattern = pattern[i:] // host-qualified pattern
	}
	return pattern
}
