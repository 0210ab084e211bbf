// Package telemetry is the observability adapter: the gateway's log/slog logger, the
// OpenTelemetry tracer provider configured from the standard OTEL_* environment variables,
// the HTTP middleware that gives every request a server span and a request id, and
// InjectHeaders for W3C trace context on engine calls.
package telemetry

import (
	"io"
	"log/slog"
	"strings"

	"github.com/smg-go/smg/app/config"
)

// ParseLevel maps a --log-level value (debug, info, warn, error; case-insensitive) to a slog
// level. Unknown values give info; config.Validate rejects them before this is reached.
func ParseLevel(s string) slog.Level {
	switch strings.ToLower(s) {
	case "debug":
		return slog.LevelDebug
	case "warn", "warning":
		return slog.LevelWarn
	case "error":
		return slog.LevelError
	}
	return slog.LevelInfo
}

// NewLogger returns the gateway logger writing to w: JSON lines (text with --log-json=false)
// at --log-level, every record tagged service=smg, and records logged with a request's
// context tagged with its request_id and trace_id (ContextHandler).
func NewLogger(cfg config.Config, w io.Writer) *slog.Logger {
	opts := &slog.HandlerOptions{Level: ParseLevel(cfg.LogLevel)}
	var h slog.Handler
	if cfg.LogJSON {
		h = slog.NewJSONHandler(w, opts)
	} else {
		h = slog.NewTextHandler(w, opts)
	}
	return slog.New(ContextHandler(h)).With("service", "smg")
}
