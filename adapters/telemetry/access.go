package telemetry

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/smg-go/smg/adapters/httpcapture"
	"github.com/smg-go/smg/domain/wire"
	"github.com/smg-go/smg/ports"
)

// ResponseObserver is told about every request AccessLog served, once its response ended,
// from the same capture the access line is written from: one response-writer wrapper per
// request, however many observers (the RED metrics are one). info is the request's
// ports.RequestInfo as the inner layers left it. ObserveResponse runs on the request's
// goroutine after the handler returned, whatever the log level; it must not keep r.
type ResponseObserver interface {
	ObserveResponse(r *http.Request, info ports.RequestInfoSnapshot, res httpcapture.Result)
}

// AccessLog is the outermost request middleware: it puts a fresh ports.RequestInfo in the
// request context (unless one is there), wraps the response writer once (httpcapture) and,
// once the response is done, tells each of observers and writes one INFO record "request"
// per request with: method, route (the matched pattern, never the raw URL's query), path,
// status, error_code (X-SMG-Error-Code), outcome (ok, client_error, server_error,
// client_closed_request), duration_ms, ttft_ms (0 when no decode byte arrived), bytes,
// request_id, trace_id, model, stream, attempts, prefill_worker and decode_worker (worker
// ids, never addresses), tenant ("" for the anonymous tenant), and span_id and trace_sampled when the request has a span. Probes
// and scrapes (/health, /liveness, /readiness, /metrics) are logged at debug only, so a
// kubelet's probes do not flood INFO. A request whose client went away before its answer
// ended (ports.RequestInfo.SetClientGone) is logged as the dispatcher's unwritten error:
// status 499, error_code and outcome client_closed_request, whatever status line had already
// been sent (observers get the status that was sent).
func AccessLog(log *slog.Logger, observers ...ResponseObserver) func(http.Handler) http.Handler {
	if log == nil {
		log = slog.Default()
	}
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			start := time.Now()
			ri := ports.RequestInfoFrom(r.Context())
			if ri == nil {
				ri = &ports.RequestInfo{Start: start}
				// One request copy for this layer and NewMiddleware's: its request-id slot
				// rides in the same context (NewMiddleware fills it instead of copying r).
				ctx := ports.WithRequestInfo(r.Context(), ri)
				r = r.WithContext(context.WithValue(ctx, ctxKey{}, &reqInfo{}))
			}
			cw := httpcapture.New(w)
			next.ServeHTTP(cw, r)
			res := cw.Result(start)
			s := ri.Snapshot()
			for _, o := range observers {
				o.ObserveResponse(r, s, res)
			}
			logAccess(log, r, s, res)
		})
	}
}

// errorCodeHeader is wire.HeaderErrorCode in canonical form: http.Header.Get canonicalizes
// its argument, which allocates for "X-SMG-Error-Code" on every request.
var errorCodeHeader = http.CanonicalHeaderKey(wire.HeaderErrorCode)

// logAccess writes AccessLog's record.
func logAccess(log *slog.Logger, r *http.Request, s ports.RequestInfoSnapshot, res httpcapture.Result) {
	status, code := res.Status, res.Header.Get(errorCodeHeader)
	outcome := Outcome(status)
	if s.ClientGone {
		status, code, outcome = StatusClientClosed, CodeClientClosed, CodeClientClosed
	}
	level := slog.LevelInfo
	if quietRoutes[s.Route] {
		level = slog.LevelDebug
	}
	if !log.Enabled(r.Context(), level) {
		return
	}
	// context.Background: the ids are attributes here already (ContextHandler would
	// add them twice).
	attrs := []slog.Attr{
		slog.String("method", r.Method),
		slog.String("route", s.Route),
		slog.String("path", r.URL.Path),
		slog.Int("status", status),
		slog.String("error_code", code),
		slog.String("outcome", outcome),
		slog.Float64("duration_ms", ms(res.Duration)),
		slog.Float64("ttft_ms", ms(s.TTFT)),
		slog.Int64("bytes", res.Bytes),
		slog.String("request_id", s.RequestID),
		slog.String("trace_id", s.TraceID),
		slog.String("model", s.Model),
		slog.Bool("stream", s.Stream),
		slog.Int("attempts", s.Attempts),
		slog.String("prefill_worker", s.PrefillID),
		slog.String("decode_worker", s.DecodeID),
		slog.String("tenant", s.Tenant),
	}
	if s.PDDecision != "" {
		attrs = append(attrs, slog.String("pd_decision", s.PDDecision), slog.String("pd_decision_reason", s.PDReason))
	}
	if s.SpanID != "" {
		attrs = append(attrs, slog.String("span_id", s.SpanID), slog.Bool("trace_sampled", s.TraceSampled))
	}
	log.LogAttrs(context.Background(), level, "request", attrs...)
}

// StatusClientClosed and CodeClientClosed are what the access line says for a client that
// went away: the dispatcher's 499-style client_closed_request (never written).
const (
	StatusClientClosed = 499
	CodeClientClosed   = "client_closed_request"
)

// quietRoutes are logged at debug: health probes and metric scrapes.
var quietRoutes = map[string]bool{"/health": true, "/liveness": true, "/readiness": true, "/metrics": true}

// Outcome classifies a response status for logs and spans: "ok" (< 400), "client_error"
// (4xx) or "server_error" (5xx).
func Outcome(status int) string {
	switch {
	case status >= 500:
		return "server_error"
	case status >= 400:
		return "client_error"
	}
	return "ok"
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
