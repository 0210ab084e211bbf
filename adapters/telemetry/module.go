package telemetry

import (
	"context"
	"log/slog"
	"os"

	"go.opentelemetry.io/otel/trace"
	"go.uber.org/fx"

	"github.com/smg-go/smg/app/config"
)

// Module provides *slog.Logger (JSON on stderr at --log-level, also installed as
// slog.Default), *Tracing and trace.TracerProvider (installed as the OpenTelemetry globals
// together with the W3C propagator), and flushes pending spans when the app stops.
func Module() fx.Option {
	return fx.Module("telemetry",
		fx.Provide(provideLogger, provideTracing),
		fx.Invoke(func(*Tracing) {}),
	)
}

func provideLogger(cfg config.Config) *slog.Logger {
	log := NewLogger(cfg, os.Stderr)
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
