package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Service-discovery series (smg-spec.md §7.5): source is "kubernetes", result "success" or
// "failed", reason "reconciled".
const (
	NameDiscoveryRegistrations   = "smg_discovery_registrations_total"
	NameDiscoveryDeregistrations = "smg_discovery_deregistrations_total"
	NameDiscoverySyncDuration    = "smg_discovery_sync_duration_seconds"
	NameDiscoveryWorkers         = "smg_discovery_workers_discovered"
)

// DiscoveryMetrics records service-discovery syncs. Safe for concurrent use.
type DiscoveryMetrics struct {
	regs, deregs *prometheus.CounterVec
	sync         *prometheus.HistogramVec
	workers      *prometheus.GaugeVec
}

// NewDiscoveryMetrics registers the discovery series on reg.
func NewDiscoveryMetrics(reg *prometheus.Registry) (*DiscoveryMetrics, error) {
	m := &DiscoveryMetrics{
		regs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: NameDiscoveryRegistrations, Help: "Workers registered by service discovery, by result.",
		}, []string{"source", "result"}),
		deregs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: NameDiscoveryDeregistrations, Help: "Workers service discovery removed, by reason.",
		}, []string{"source", "reason"}),
		sync: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: NameDiscoverySyncDuration, Help: "Time to apply one discovered desired set to the registry, in seconds.",
			Buckets: []float64{0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5},
		}, []string{"source"}),
		workers: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: NameDiscoveryWorkers, Help: "Workers in the last discovered desired set.",
		}, []string{"source"}),
	}
	for _, c := range []prometheus.Collector{m.regs, m.deregs, m.sync, m.workers} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// Sync records one sync from source: the desired set's size, what it registered (ok),
// refused (failed) and removed, and how long it took.
func (m *DiscoveryMetrics) Sync(source string, desired, ok, failed, removed int, took time.Duration) {
	m.workers.WithLabelValues(source).Set(float64(desired))
	m.regs.WithLabelValues(source, "success").Add(float64(ok))
	m.regs.WithLabelValues(source, "failed").Add(float64(failed))
	m.deregs.WithLabelValues(source, "reconciled").Add(float64(removed))
	m.sync.WithLabelValues(source).Observe(took.Seconds())
}
