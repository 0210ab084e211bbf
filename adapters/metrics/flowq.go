package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/smg-go/smg/ports"
)

// Flow-control queue series, per tenant. Public contracts, like names.go.
const (
	NameFlowQueueDepth    = "smg_flow_queue_depth"
	NameFlowQueueEnqueued = "smg_flow_queue_enqueued_total"
	NameFlowQueueSeconds  = "smg_flow_queue_wait_seconds"
	NameFlowQueueSheds    = "smg_flow_queue_sheds_total"

	LabelTenant = "tenant"

	// TenantAnonymous is the tenant label of requests without a tenant.
	TenantAnonymous = "anonymous"
)

// FlowQueueMetrics records the flow-control queue series. It implements
// ports.FlowQueueMetrics. Tenant label values come from the tenants file, so their number
// is bounded by it. Safe for concurrent use.
type FlowQueueMetrics struct {
	depth    *prometheus.GaugeVec
	enqueued *prometheus.CounterVec
	wait     *prometheus.HistogramVec
	sheds    *prometheus.CounterVec
}

var _ ports.FlowQueueMetrics = (*FlowQueueMetrics)(nil)

// NewFlowQueueMetrics creates the queue series and registers them on reg. It fails only
// when reg already holds a series of the same name.
func NewFlowQueueMetrics(reg *prometheus.Registry) (*FlowQueueMetrics, error) {
	m := &FlowQueueMetrics{
		depth: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: NameFlowQueueDepth, Help: "Requests queued for a decode slot on this replica, per tenant.",
		}, []string{LabelTenant}),
		enqueued: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: NameFlowQueueEnqueued, Help: "Requests that entered the flow-control queue because the decode window was full, per tenant.",
		}, []string{LabelTenant}),
		wait: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: NameFlowQueueSeconds, Help: "Time spent in the flow-control queue, in seconds, per tenant and outcome (admitted, shed, cancelled).",
			Buckets: DurationBuckets,
		}, []string{LabelTenant, LabelOutcome}),
		sheds: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: NameFlowQueueSheds, Help: "Requests the flow-control queue shed with 503, per tenant and reason (deadline, evicted, queue_full).",
		}, []string{LabelTenant, LabelReason}),
	}
	for _, c := range []prometheus.Collector{m.depth, m.enqueued, m.wait, m.sheds} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

func tenantLabel(t string) string {
	if t == "" {
		return TenantAnonymous
	}
	return t
}

// AddQueued moves smg_flow_queue_depth{tenant} by delta and, for delta > 0, adds it to
// smg_flow_queue_enqueued_total{tenant}.
func (m *FlowQueueMetrics) AddQueued(tenant string, delta int) {
	t := tenantLabel(tenant)
	m.depth.WithLabelValues(t).Add(float64(delta))
	if delta > 0 {
		m.enqueued.WithLabelValues(t).Add(float64(delta))
	}
}

// ObserveQueueTime records smg_flow_queue_wait_seconds{tenant,outcome}.
func (m *FlowQueueMetrics) ObserveQueueTime(tenant, outcome string, d time.Duration) {
	m.wait.WithLabelValues(tenantLabel(tenant), outcome).Observe(d.Seconds())
}

// IncQueueShed increments smg_flow_queue_sheds_total{tenant,reason}.
func (m *FlowQueueMetrics) IncQueueShed(tenant, reason string) {
	m.sheds.WithLabelValues(tenantLabel(tenant), reason).Inc()
}
