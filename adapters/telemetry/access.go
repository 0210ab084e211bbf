package telemetry

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/felixge/httpsnoop"

	"github.com/smg-go/smg/domain/wire"
	"github.com/smg-go/smg/ports"
)

// AccessLog is the outermost request middleware: it puts a fresh ports.RequestInfo in the
// request context (unless one is there) and, once the response is done, writes one INFO
// record "request" per request with: method, route (the matched pattern, never the raw
// URL's query), path, status, error_code (X-SMG-Error-Code), outcome (ok, client_error,
// server_error, client_closed_request), duration_ms, ttft_ms (0 when no decode byte arrived), bytes, request_id,
// trace_id, model, stream, attempts, prefill_worker and decode_worker (worker ids, never
// addresses). Probes and scrapes (/health, /liveness, /readiness, /metrics) are logged at
// debug only, so a kubelet's probes do not flood INFO. A request whose client went away
// before its answer ended (ports.RequestInfo.SetClientGone) is logged as the dispatcher's
// unwritten error: status 499, error_code and outcome client_closed_request, whatever
// status line had already been sent.
func AccessLog(log *slog.Logger) func(http.Handler) http.Handler {
	if log == nil {
		log = slog.Default()
	}
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			ri := ports.RequestInfoFrom(r.Context())
			if ri == nil {
				ri = &ports.RequestInfo{Start: time.Now()}
				r = r.WithContext(ports.WithRequestInfo(r.Context(), ri))
			}
			m := httpsnoop.CaptureMetrics(next, w, r)
			s := ri.Snapshot()
			status, code := m.Code, w.Header().Get(wire.HeaderErrorCode)
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
			log.LogAttrs(context.Background(), level, "request",
				slog.String("method", r.Method),
				slog.String("route", s.Route),
				slog.String("path", r.URL.Path),
				slog.Int("status", status),
				slog.String("error_code", code),
				slog.String("outcome", outcome),
				slog.Float64("duration_ms", ms(m.Duration)),
				slog.Float64("ttft_ms", ms(s.TTFT)),
				slog.Int64("bytes", m.Written),
				slog.String("request_id", s.RequestID),
				slog.String("trace_id", s.TraceID),
				slog.String("model", s.Model),
				slog.Bool("stream", s.Stream),
				slog.Int("attempts", s.Attempts),
				slog.String("prefill_worker", s.PrefillID),
				slog.String("decode_worker", s.DecodeID),
			)
		})
	}
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
