package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
)

// Circuit-breaker series (smg-spec.md §3.6, §7.3). Public contracts, like names.go.
const (
	NameWorkerCBState       = "smg_worker_cb_state"
	NameWorkerCBTransitions = "smg_worker_cb_transitions_total"
	NameWorkerCBOutcomes    = "smg_worker_cb_outcomes_total"

	LabelFrom    = "from"
	LabelTo      = "to"
	LabelOutcome = "outcome"
)

// BreakerMetrics records the per-worker circuit-breaker series. It implements
// adapters/breaker.Metrics; worker label values are worker URLs. Safe for concurrent use.
type BreakerMetrics struct {
	state       *prometheus.GaugeVec
	transitions *prometheus.CounterVec
	outcomes    *prometheus.CounterVec
}

// NewBreakerMetrics creates the breaker series and registers them on reg. It fails only when
// reg already holds a series of the same name.
func NewBreakerMetrics(reg *prometheus.Registry) (*BreakerMetrics, error) {
	m := &BreakerMetrics{
		state: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: NameWorkerCBState, Help: "Circuit-breaker state per worker: 0 closed, 1 open, 2 half_open.",
		}, []string{LabelWorker}),
		transitions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: NameWorkerCBTransitions, Help: "Circuit-breaker state transitions per worker (closed, open, half_open).",
		}, []string{LabelWorker, LabelFrom, LabelTo}),
		outcomes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: NameWorkerCBOutcomes, Help: "Leg outcomes recorded by each worker's circuit breaker (success, failure); 429 is not counted.",
		}, []string{LabelWorker, LabelOutcome}),
	}
	for _, c := range []prometheus.Collector{m.state, m.transitions, m.outcomes} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// SetCBState sets smg_worker_cb_state{worker} (0 closed, 1 open, 2 half_open).
func (m *BreakerMetrics) SetCBState(worker string, state int) {
	m.state.WithLabelValues(label(worker)).Set(float64(state))
}

// IncCBTransition increments smg_worker_cb_transitions_total{worker,from,to}.
func (m *BreakerMetrics) IncCBTransition(worker, from, to string) {
	m.transitions.WithLabelValues(label(worker), from, to).Inc()
}

// IncCBOutcome increments smg_worker_cb_outcomes_total{worker,outcome}.
func (m *BreakerMetrics) IncCBOutcome(worker, outcome string) {
	m.outcomes.WithLabelValues(label(worker), outcome).Inc()
}

// ForgetCB deletes every breaker series labelled with worker.
func (m *BreakerMetrics) ForgetCB(worker string) {
	l := prometheus.Labels{LabelWorker: label(worker)}
	m.state.DeletePartialMatch(l)
	m.transitions.DeletePartialMatch(l)
	m.outcomes.DeletePartialMatch(l)
}
