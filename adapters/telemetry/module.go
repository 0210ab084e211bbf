package telemetry

import (
	"context"
	"log/slog"
	"os"

	"go.opentelemetry.io/otel/trace"
	"go.uber.org/fx"
)

// Module provides *slog.Logger (from the LogOptions the composition root supplies, on stderr, also installed as
// slog.Default), *Tracing and trace.TracerProvider (installed as the OpenTelemetry globals
// together with the W3C propagator), and flushes pending spans when the app stops.
func Module() fx.Option {
	return fx.Module("telemetry",
		fx.Provide(provideLogger, provideTracing),
		fx.Invoke(func(*Tracing) {}),
	)
}

func provideLogger(o LogOptions) *slog.Logger {
	log := NewLogger(o, os.Stderr)
	slog.SetDefault(log)
	return log
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
