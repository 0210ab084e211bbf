package telemetry

import (
	"context"
	"log/slog"
)

// Flusher is an output that holds records back until Flush (LogWriter).
type Flusher interface{ Flush() error }

// FlushOnWarn wraps h so that every record at WARN or above is flushed out of f (the
// output h writes to) as soon as h has written it: warnings and errors never wait for the
// flush interval, and they bring the records before them along.
func FlushOnWarn(h slog.Handler, f Flusher) slog.Handler { return &flushOnWarn{h: h, f: f} }

type flushOnWarn struct {
	h slog.Handler
	f Flusher
}

func (x *flushOnWarn) Enabled(ctx context.Context, l slog.Level) bool { return x.h.Enabled(ctx, l) }

func (x *flushOnWarn) Handle(ctx context.Context, r slog.Record) error {
	err := x.h.Handle(ctx, r)
	if r.Level >= slog.LevelWarn {
		if ferr := x.f.Flush(); err == nil {
			err = ferr
		}
	}
	return err
}

func (x *flushOnWarn) WithAttrs(as []slog.Attr) slog.Handler {
	return &flushOnWarn{h: x.h.WithAttrs(as), f: x.f}
}

func (x *flushOnWarn) WithGroup(name string) slog.Handler {
	return &flushOnWarn{h: x.h.WithGroup(name), f: x.f}
}

var _ slog.Handler = (*flushOnWarn)(nil)
