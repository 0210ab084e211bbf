// Package telemetry is the observability adapter: the gateway's log/slog logger, the
// OpenTelemetry tracer provider configured from the standard OTEL_* environment variables,
// the HTTP middleware that gives every request a server span and a request id, and
// InjectHeaders for W3C trace context on engine calls.
package telemetry

import (
	"io"
	"log/slog"
	"strings"
	"time"
)

// ParseLevel maps a --log-level value (debug, info, warn, error; case-insensitive) to a slog
// level. Unknown values give info; the configuration rejects them before this is reached.
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

// LogOptions choose the gateway logger; the composition root maps --log-level, --log-format,
// --log-json and --log-flush-interval-ms onto them.
type LogOptions struct {
	// Level is "debug", "info", "warn" or "error" (anything else: info).
	Level string
	// Format is "json", "text", "cloud" or "" (JSON unless JSON is false).
	Format string
	// JSON picks JSON over text when Format is "".
	JSON bool
	// CloudProject is the Google Cloud project id the cloud format writes traces under
	// (projects/<id>/traces/<trace id>); "" reads $GOOGLE_CLOUD_PROJECT, and without either
	// the bare trace id is written.
	CloudProject string
	// FlushInterval is --log-flush-interval-ms: the Module's logger buffers its records
	// (LogWriter) and writes them out at least this often; 0 writes every record at once.
	FlushInterval time.Duration
}

// NewLogger returns the gateway logger writing to w at --log-level in --log-format (json,
// text, or cloud: see CloudHandler and LogOptions.CloudProject; without --log-format, JSON unless --log-json=false),
// every record tagged service=smg, and records logged with a request's context tagged with
// its request_id and trace_id (ContextHandler). When w is a Flusher (a LogWriter), every
// record at WARN or above is flushed at once (FlushOnWarn).
func NewLogger(o LogOptions, w io.Writer) *slog.Logger {
	opts := &slog.HandlerOptions{Level: ParseLevel(o.Level)}
	format := strings.ToLower(o.Format)
	if format == "" {
		format = "text"
		if o.JSON {
			format = "json"
		}
	}
	var h slog.Handler
	switch format {
	case "text":
		h = slog.NewTextHandler(w, opts)
	case "cloud":
		h = cloudTrace{CloudHandler(w, opts.Level), cloudProject(o.CloudProject)}
	default:
		h = slog.NewJSONHandler(w, opts)
	}
	if f, ok := w.(Flusher); ok {
		h = FlushOnWarn(h, f)
	}
	return slog.New(ContextHandler(h)).With("service", "smg")
}

// CloudHandler writes JSON lines with the keys Cloud Logging reads from a container's
// stdout/stderr: "severity" (DEBUG, INFO, WARNING, ERROR) instead of "level" and "message"
// instead of "msg"; "time" is RFC 3339 as Cloud Logging accepts it. CloudWatch (ECS awslogs)
// stores the same lines as structured JSON. NewLogger's cloud format adds Cloud Logging's
// trace, spanId and trace_sampled fields to it (CloudTraceKey and the others).
func CloudHandler(w io.Writer, level slog.Leveler) slog.Handler {
	return slog.NewJSONHandler(w, &slog.HandlerOptions{Level: level, ReplaceAttr: cloudKeys})
}

func cloudKeys(groups []string, a slog.Attr) slog.Attr {
	if len(groups) > 0 {
		return a
	}
	switch a.Key {
	case slog.LevelKey:
		lv, _ := a.Value.Any().(slog.Level)
		sev := "DEFAULT"
		switch {
		case lv >= slog.LevelError:
			sev = "ERROR"
		case lv >= slog.LevelWarn:
			sev = "WARNING"
		case lv >= slog.LevelInfo:
			sev = "INFO"
		default:
			sev = "DEBUG"
		}
		return slog.String("severity", sev)
	case slog.MessageKey:
		return slog.String("message", a.Value.String())
	}
	return a
}
