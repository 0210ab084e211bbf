package telemetry

import (
	"context"
	"crypto/rand"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/smg-go/smg/adapters/httpcapture"
	"github.com/smg-go/smg/domain/wire"
	"github.com/smg-go/smg/ports"
)

// RequestIDHeaders are the request headers a client-supplied request id is taken from, first
// present wins (smg-spec.md §3.8 `--request-id-headers` defaults).
var RequestIDHeaders = []string{"X-Request-Id", "X-Correlation-Id", "X-Trace-Id", "Request-Id"}

type ctxKey struct{}

// reqInfo is filled in as the request passes the middleware layers, for the access log.
type reqInfo struct {
	id      string
	traceID string
	pattern string
}

// RequestID returns the request id Middleware assigned to the request carrying ctx, or "".
func RequestID(ctx context.Context) string {
	if ri, ok := ctx.Value(ctxKey{}).(*reqInfo); ok {
		return ri.id
	}
	return ""
}

// Middleware wraps next with the gateway's request handling, logging through slog.Default()
// and tracing with the global tracer provider. See NewMiddleware.
func Middleware(next http.Handler) http.Handler { return NewMiddleware(slog.Default(), nil)(next) }

// NewMiddleware returns the request middleware. For every request it:
//   - takes the request id from the first of RequestIDHeaders present (WithRequestIDHeaders:
//     the configured list), or generates one when none is or it is not a valid id
//     (`<prefix><24 alphanumerics>`, prefix by route: chatcmpl-, cmpl-, gnt-, resp-, msg_,
//     req-; smg-spec.md §3.8), echoes it as X-Request-Id and stores it for RequestID(ctx);
//   - starts a server span (otelhttp on tp, or the global provider when tp is nil; W3C trace
//     context extracted from the request) named after the matched ServeMux pattern, tagged
//     smg.request_id — unless tp is a no-op provider (tracing off), where no span is made;
//   - at debug level, writes one access-log record (method, path, route, status, bytes,
//     duration_ms, request_id, trace_id).
//
// The response writer keeps http.Flusher and the other optional interfaces, so streamed
// responses flush at once.
func NewMiddleware(log *slog.Logger, tp trace.TracerProvider, opts ...Option) func(http.Handler) http.Handler {
	if log == nil {
		log = slog.Default()
	}
	o := options{requestIDHeaders: RequestIDHeaders}
	for _, opt := range opts {
		opt(&o)
	}
	// Canonical names: http.Header.Get canonicalizes its argument, which allocates on every
	// request for a name such as "x-request-id".
	ids := make([]string, len(o.requestIDHeaders))
	for i, h := range o.requestIDHeaders {
		ids[i] = http.CanonicalHeaderKey(h)
	}
	o.requestIDHeaders = ids
	hopts := []otelhttp.Option{otelhttp.WithPropagators(propagator), otelhttp.WithSpanNameFormatter(spanName)}
	if tp != nil {
		hopts = append(hopts, otelhttp.WithTracerProvider(tp))
	}
	return func(next http.Handler) http.Handler {
		inner := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			ri, _ := r.Context().Value(ctxKey{}).(*reqInfo)
			span := trace.SpanFromContext(r.Context())
			if ri != nil {
				if span.IsRecording() { // a no-op span would drop it, after allocating its arguments
					span.SetAttributes(attribute.String("smg.request_id", ri.id))
				}
				if sc := span.SpanContext(); sc.HasTraceID() {
					ri.traceID = sc.TraceID().String()
				}
			}
			next.ServeHTTP(w, r) // r itself, so the mux's r.Pattern is visible to otelhttp
			if span.IsRecording() {
				if dec, why := ports.RequestInfoFrom(r.Context()).PDDecision(); dec != "" {
					span.SetAttributes(attribute.String(AttrPDDecision, dec), attribute.String(AttrPDDecisionReason, why))
				}
			}
			if ri != nil {
				ri.pattern = r.Pattern
			}
		})
		// With tracing off (a no-op provider) no span would be recorded: skip otelhttp, about
		// 9% of the gateway's CPU per request under load (docs/benchmarks.md). A client's
		// traceparent still reaches the engines: the legs forward it as received.
		var traced http.Handler = inner
		if _, off := tp.(noop.TracerProvider); !off {
			traced = otelhttp.NewHandler(inner, "smg", hopts...)
		}
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			// AccessLog leaves an empty reqInfo in the context it made: fill that one
			// rather than copy the request again.
			ri, seeded := r.Context().Value(ctxKey{}).(*reqInfo)
			if !seeded || ri.id != "" {
				ri = &reqInfo{}
				r = r.WithContext(context.WithValue(r.Context(), ctxKey{}, ri))
			}
			ri.id = incomingRequestID(r, o.requestIDHeaders)
			if ri.id == "" {
				ri.id = newRequestID(r.URL.Path)
			}
			w.Header().Set(wire.HeaderRequestID, ri.id)
			if !log.Enabled(r.Context(), slog.LevelDebug) {
				traced.ServeHTTP(w, r)
				return
			}
			start := time.Now()
			cw := httpcapture.New(w)
			traced.ServeHTTP(cw, r)
			m := cw.Result(start)
			log.LogAttrs(r.Context(), slog.LevelDebug, "http request",
				slog.String("method", r.Method),
				slog.String("path", r.URL.Path),
				slog.String("route", ri.pattern),
				slog.Int("status", m.Status),
				slog.Int64("bytes", m.Bytes),
				slog.Float64("duration_ms", ms(m.Duration)),
				slog.String("request_id", ri.id),
				slog.String("trace_id", ri.traceID),
			)
		})
	}
}

// spanName is the matched pattern ("POST /v1/chat/completions") once routing is known, else
// the method.
func spanName(_ string, r *http.Request) string {
	if r.Pattern == "" {
		return r.Method
	}
	if strings.HasPrefix(r.Pattern, r.Method+" ") {
		return r.Pattern
	}
	return r.Method + " " + r.Pattern
}

// Option tunes NewMiddleware.
type Option func(*options)

type options struct{ requestIDHeaders []string }

// WithRequestIDHeaders makes the middleware read the client's request id from headers
// (--request-id-headers, first present wins) instead of RequestIDHeaders. An empty list
// keeps the default.
func WithRequestIDHeaders(headers []string) Option {
	return func(o *options) {
		if len(headers) > 0 {
			o.requestIDHeaders = headers
		}
	}
}

// incomingRequestID is the client's request id from the first of headers present,
// or "" (a new one is minted) when none is present or the first present one is not a valid
// id (wire.ValidRequestID): a hostile value is never echoed nor logged. The data-plane routes
// refuse such a request with 400 (dispatch.Guard).
func incomingRequestID(r *http.Request, headers []string) string {
	for _, h := range headers {
		if v := strings.TrimSpace(r.Header.Get(h)); v != "" {
			if !wire.ValidRequestID(v) {
				return ""
			}
			return v
		}
	}
	return ""
}

const idAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"

// newRequestID mints `<prefix><24 alphanumerics>` with the prefix of the route
// (smg-spec.md §3.8).
func newRequestID(path string) string {
	prefix := "req-"
	switch {
	case strings.HasPrefix(path, "/v1/chat/completions"):
		prefix = "chatcmpl-"
	case strings.HasPrefix(path, "/v1/completions"):
		prefix = "cmpl-"
	case strings.HasPrefix(path, "/generate"):
		prefix = "gnt-"
	case strings.HasPrefix(path, "/v1/responses"):
		prefix = "resp-"
	case strings.HasPrefix(path, "/v1/messages"):
		prefix = "msg_"
	}
	var b [24]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	for i := range b {
		b[i] = idAlphabet[int(b[i])%len(idAlphabet)]
	}
	return prefix + string(b[:])
}
