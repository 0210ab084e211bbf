package telemetry

import (
	"context"
	"log/slog"
	"os"
	"strings"

	"go.opentelemetry.io/otel/trace"
)

// Cloud Logging's trace correlation keys in a structured log line (cloud.google.com/logging/
// docs/structured-logging, "Special JSON fields in messages"): the trace as
// projects/<project>/traces/<trace id>, the span id (hex) and the sampled flag.
const (
	CloudTraceKey        = "logging.googleapis.com/trace"
	CloudSpanIDKey       = "logging.googleapis.com/spanId"
	CloudTraceSampledKey = "logging.googleapis.com/trace_sampled"
)

// CloudProjectEnv names the project id the cloud format uses when LogOptions.CloudProject is
// empty (set by Google's client libraries' conventions; Cloud Run does not set it itself).
const CloudProjectEnv = "GOOGLE_CLOUD_PROJECT"

// cloudTrace adds Cloud Logging's trace, spanId and trace_sampled fields to every record
// that has a trace: from its trace_id, span_id and trace_sampled attributes (the access
// line), else from the span in the context it was logged with. The trace is
// projects/<project>/traces/<trace id> when project is known, else the bare trace id.
type cloudTrace struct {
	slog.Handler
	project string
}

// cloudProject is p, else $GOOGLE_CLOUD_PROJECT.
func cloudProject(p string) string {
	if p = strings.TrimSpace(p); p != "" {
		return p
	}
	return strings.TrimSpace(os.Getenv(CloudProjectEnv))
}

func (h cloudTrace) Handle(ctx context.Context, r slog.Record) error {
	var traceID, spanID string
	var sampled, haveSampled bool
	r.Attrs(func(a slog.Attr) bool {
		switch a.Key {
		case "trace_id":
			traceID = a.Value.String()
		case "span_id":
			spanID = a.Value.String()
		case "trace_sampled":
			if a.Value.Kind() == slog.KindBool {
				sampled, haveSampled = a.Value.Bool(), true
			}
		}
		return true
	})
	if ctx != nil {
		if sc := trace.SpanContextFromContext(ctx); sc.HasTraceID() && (traceID == "" || traceID == sc.TraceID().String()) {
			traceID = sc.TraceID().String()
			if spanID == "" && sc.HasSpanID() {
				spanID = sc.SpanID().String()
			}
			if !haveSampled {
				sampled, haveSampled = sc.IsSampled(), true
			}
		}
	}
	if traceID == "" {
		return h.Handler.Handle(ctx, r)
	}
	r = r.Clone()
	t := traceID
	if h.project != "" {
		t = "projects/" + h.project + "/traces/" + traceID
	}
	r.AddAttrs(slog.String(CloudTraceKey, t))
	if spanID != "" {
		r.AddAttrs(slog.String(CloudSpanIDKey, spanID))
	}
	if haveSampled {
		r.AddAttrs(slog.Bool(CloudTraceSampledKey, sampled))
	}
	return h.Handler.Handle(ctx, r)
}

func (h cloudTrace) WithAttrs(as []slog.Attr) slog.Handler {
	return cloudTrace{h.Handler.WithAttrs(as), h.project}
}

func (h cloudTrace) WithGroup(name string) slog.Handler {
	return cloudTrace{h.Handler.WithGroup(name), h.project}
}
