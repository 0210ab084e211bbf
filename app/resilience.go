package app

import (
	"go.uber.org/fx"

	"github.com/smg-go/smg/adapters/breaker"
	"github.com/smg-go/smg/adapters/metrics"
	"github.com/smg-go/smg/app/config"
	"github.com/smg-go/smg/app/dispatch"
	"github.com/smg-go/smg/app/watchdog"
)

// resilienceModule wires the per-worker circuit breakers: the breaker Set follows the worker
// store, reports to the Prometheus breaker series and records the dispatcher's leg outcomes
// (dispatch.OutcomeRecorder), and the progress watchdog whose canaries confirm stalled
// workers and probe half-open breakers.
func resilienceModule() fx.Option {
	return fx.Options(
		breaker.Module(),
		fx.Provide(
			BreakerSettings,
			metrics.NewBreakerMetrics,
			func(m *metrics.BreakerMetrics) breaker.Metrics { return m },
			func(s *breaker.Set) dispatch.OutcomeRecorder { return s },
			func(s *breaker.Set) watchdog.Breakers { return s },
		),
		watchdog.Module(),
	)
}

// BreakerSettings maps the --cb-* flags onto the breaker adapter's Settings.
// --cb-window-duration-secs is accepted by config but unused: the breaker counts
// consecutive outcomes only (smg-spec.md §3.6).
func BreakerSettings(cfg config.Config) breaker.Settings {
	return breaker.Settings{
		FailureThreshold:        cfg.CBFailureThreshold,
		SuccessThreshold:        cfg.CBSuccessThreshold,
		Timeout:                 cfg.CBTimeout,
		Disabled:                cfg.DisableCircuitBreaker,
		TimeoutFailureThreshold: cfg.CBTimeoutFailureThreshold,
		MaxEjectionPercent:      cfg.CBMaxEjectionPercent,
	}
}
