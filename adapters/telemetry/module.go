package telemetry

import (
	"context"
	"log/slog"
	"os"

	"go.opentelemetry.io/otel/trace"
	"go.uber.org/fx"
)

// Module provides *slog.Logger (from the LogOptions the composition root supplies, on stderr
// through the *LogWriter it also provides, also installed as slog.Default), *Tracing and
// trace.TracerProvider (installed as the OpenTelemetry globals together with the W3C
// propagator). Log records are buffered while the app runs; when it stops it flushes
// pending spans and, last, the buffered log records (LogWriter.Close).
func Module() fx.Option {
	return fx.Module("telemetry",
		fx.Provide(provideLogger, provideTracing),
		fx.Invoke(func(*Tracing) {}),
	)
}

type loggerOut struct {
	fx.Out
	Log    *slog.Logger
	Output *LogWriter
}

// provideLogger builds the logger on stderr through a LogWriter, buffered (unless
// o.FlushInterval is 0) from the app's start to its stop: records logged while the graph
// is built, or after it stopped, are written at once. The hook is appended when the logger
// is built, before any other component's, so its OnStart runs first and its OnStop last:
// the shutdown's own lines are written out.
func provideLogger(lc fx.Lifecycle, o LogOptions) loggerOut {
	out := NewLogWriter(os.Stderr, LogBufferSize, o.FlushInterval)
	lc.Append(fx.Hook{
		OnStart: func(context.Context) error { out.Start(); return nil },
		OnStop:  func(context.Context) error { return out.Close() },
	})
	log := NewLogger(o, out)
	slog.SetDefault(log)
	return loggerOut{Log: log, Output: out}
}

type tracingOut struct {
	fx.Out
	Tracing  *Tracing
	Provider trace.TracerProvider
}

func provideTracing(lc fx.Lifecycle, log *slog.Logger) (tracingOut, error) {
	t, err := NewTracing(context.Background(), os.Getenv)
	if err != nil {
		return tracingOut{}, err
	}
	t.Install()
	if t.Exporting {
		log.Info("tracing: exporting spans over OTLP", "protocol", t.Protocol)
	}
	lc.Append(fx.Hook{OnStop: t.Shutdown})
	return tracingOut{Tracing: t, Provider: t.Provider}, nil
}
