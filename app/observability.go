package app

import (
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/fx"

	"github.com/smg-go/smg/adapters/metrics"
	"github.com/smg-go/smg/app/dispatch"
	"github.com/smg-go/smg/domain/worker"
	"github.com/smg-go/smg/ports"
)

// observabilityModule provides the RED series (*metrics.RED: smg_http_*, smg_router_*,
// smg_worker_errors_total, smg_worker_pool_size) and tees the dispatcher's leg outcomes
// into smg_worker_errors_total next to the circuit breakers.
func observabilityModule() fx.Option {
	return fx.Options(
		fx.Provide(func(reg *prometheus.Registry, store ports.WorkerStore) (*metrics.RED, error) {
			return metrics.NewRED(reg, store)
		}),
		fx.Decorate(func(o dispatch.OutcomeRecorder, red *metrics.RED) dispatch.OutcomeRecorder {
			return teeOutcomes{o, red}
		}),
	)
}

// teeOutcomes records every leg outcome on both recorders.
type teeOutcomes struct{ a, b dispatch.OutcomeRecorder }

func (t teeOutcomes) Record(w *worker.Live, status int, err error) {
	t.a.Record(w, status, err)
	t.b.Record(w, status, err)
}
