package metrics

import (
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Retry series of smg-spec.md §2.11 / §7.3.
const (
	NameWorkerRetries          = "smg_worker_retries_total"
	NameWorkerRetriesExhausted = "smg_worker_retries_exhausted_total"
	NameWorkerRetryBackoff     = "smg_worker_retry_backoff_seconds"
)

// RetryMetrics records PD retries: every retry re-selects both legs, so each counts once for
// worker_type prefill and once for decode. Safe for concurrent use.
type RetryMetrics struct {
	retries, exhausted *prometheus.CounterVec
	backoff            *prometheus.HistogramVec
}

// NewRetryMetrics registers the retry series on reg.
func NewRetryMetrics(reg *prometheus.Registry) (*RetryMetrics, error) {
	m := &RetryMetrics{
		retries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: NameWorkerRetries, Help: "Retries of a PD request on a freshly selected pair, per leg and endpoint.",
		}, []string{LabelWorkerType, "endpoint"}),
		exhausted: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: NameWorkerRetriesExhausted, Help: "PD requests that failed with a retryable error after their last attempt.",
		}, []string{LabelWorkerType, "endpoint"}),
		backoff: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: NameWorkerRetryBackoff, Help: "Backoff before a retry attempt, in seconds.",
			Buckets: []float64{0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30},
		}, []string{"attempt"}),
	}
	for _, c := range []prometheus.Collector{m.retries, m.exhausted, m.backoff} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// Retry counts one retry of endpoint (both legs) and its backoff before attempt (1-based).
func (m *RetryMetrics) Retry(endpoint string, attempt int, backoff time.Duration) {
	m.retries.WithLabelValues("prefill", endpoint).Inc()
	m.retries.WithLabelValues("decode", endpoint).Inc()
	m.backoff.WithLabelValues(strconv.Itoa(attempt)).Observe(backoff.Seconds())
}

// Exhausted counts a request whose last attempt still failed with a retryable error.
func (m *RetryMetrics) Exhausted(endpoint string) {
	m.exhausted.WithLabelValues("prefill", endpoint).Inc()
	m.exhausted.WithLabelValues("decode", endpoint).Inc()
}
