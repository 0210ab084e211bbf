package telemetry

import (
	"context"
	"log/slog"

	"go.opentelemetry.io/otel/trace"

	"github.com/smg-go/smg/ports"
)

// ContextHandler wraps h so every record logged with a request's context (log.InfoContext,
// log.LogAttrs(ctx, ...)) carries that request's request_id and trace_id: retry, fault and
// shutdown lines can be joined to the access line and the trace. Records without a request
// context pass through unchanged.
func ContextHandler(h slog.Handler) slog.Handler { return ctxHandler{h} }

type ctxHandler struct{ slog.Handler }

func (h ctxHandler) Handle(ctx context.Context, r slog.Record) error {
	if ctx != nil {
		id := RequestID(ctx)
		if id == "" {
			id = ports.RequestInfoFrom(ctx).RequestID()
		}
		if id != "" {
			r.AddAttrs(slog.String("request_id", id))
			if sc := trace.SpanContextFromContext(ctx); sc.HasTraceID() {
				r.AddAttrs(slog.String("trace_id", sc.TraceID().String()))
			}
		}
	}
	return h.Handler.Handle(ctx, r)
}

func (h ctxHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return ctxHandler{h.Handler.WithAttrs(as)}
}
func (h ctxHandler) WithGroup(name string) slog.Handler { return ctxHandler{h.Handler.WithGroup(name)} }
