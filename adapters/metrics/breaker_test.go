package metrics_test

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/adapters/breaker"
	"github.com/smg-go/smg/adapters/metrics"
)

var _ breaker.Metrics = (*metrics.BreakerMetrics)(nil)

func TestBreakerSeries(t *testing.T) {
	t.Parallel()
	reg := metrics.NewRegistry()
	m, err := metrics.NewBreakerMetrics(reg)
	require.NoError(t, err)
	_, err = metrics.NewBreakerMetrics(reg)
	require.Error(t, err, "registering the series twice fails")

	const a, b = "http://127.0.0.1:1", "http://127.0.0.1:2"
	m.SetCBState(a, 1)
	m.SetCBState(b, 0)
	m.IncCBTransition(a, "closed", "open")
	m.IncCBOutcome(a, "failure")
	m.IncCBOutcome(a, "failure")
	m.IncCBOutcome(b, "success")

	want := `
# HELP smg_worker_cb_state Circuit-breaker state per worker: 0 closed, 1 open, 2 half_open.
# TYPE smg_worker_cb_state gauge
smg_worker_cb_state{worker="http://127.0.0.1:1"} 1
smg_worker_cb_state{worker="http://127.0.0.1:2"} 0
# HELP smg_worker_cb_transitions_total Circuit-breaker state transitions per worker (closed, open, half_open).
# TYPE smg_worker_cb_transitions_total counter
smg_worker_cb_transitions_total{from="closed",to="open",worker="http://127.0.0.1:1"} 1
# HELP smg_worker_cb_outcomes_total Leg outcomes recorded by each worker's circuit breaker (success, failure); 429 is not counted.
# TYPE smg_worker_cb_outcomes_total counter
smg_worker_cb_outcomes_total{outcome="failure",worker="http://127.0.0.1:1"} 2
smg_worker_cb_outcomes_total{outcome="success",worker="http://127.0.0.1:2"} 1
`
	names := []string{metrics.NameWorkerCBState, metrics.NameWorkerCBTransitions, metrics.NameWorkerCBOutcomes}
	require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(want), names...))

	m.ForgetCB(a)
	want = `
# HELP smg_worker_cb_state Circuit-breaker state per worker: 0 closed, 1 open, 2 half_open.
# TYPE smg_worker_cb_state gauge
smg_worker_cb_state{worker="http://127.0.0.1:2"} 0
# HELP smg_worker_cb_outcomes_total Leg outcomes recorded by each worker's circuit breaker (success, failure); 429 is not counted.
# TYPE smg_worker_cb_outcomes_total counter
smg_worker_cb_outcomes_total{outcome="success",worker="http://127.0.0.1:2"} 1
`
	require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(want), names...))
}
