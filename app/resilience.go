package app

import (
	"go.uber.org/fx"

	"github.com/smg-go/smg/adapters/breaker"
	"github.com/smg-go/smg/adapters/metrics"
	"github.com/smg-go/smg/app/dispatch"
)

// resilienceModule wires the per-worker circuit breakers (issue #9): the breaker Set follows
// the worker store, reports to the Prometheus breaker series and records the dispatcher's
// leg outcomes (dispatch.OutcomeRecorder).
func resilienceModule() fx.Option {
	return fx.Options(
		breaker.Module(),
		fx.Provide(
			metrics.NewBreakerMetrics,
			func(m *metrics.BreakerMetrics) breaker.Metrics { return m },
			func(s *breaker.Set) dispatch.OutcomeRecorder { return s },
		),
	)
}
