package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/smg-go/smg/ports"
)

// Router-level gRPC series (seed "Metrics"; smg-spec.md §7.2). Public contracts.
// LabelRouterType and LabelEndpoint are declared with the RED series (red.go).
const (
	NameRouterTTFT = "smg_router_ttft_seconds"
	// RouterTypeGRPC is the router_type of the gRPC pipeline.
	RouterTypeGRPC = "grpc"
)

// RouterMetrics records smg_router_ttft_seconds{router_type,backend_type,model,endpoint}:
// on the gRPC PD path the decode leg only, from its dispatch to its first output (the
// client's wait is smg_pd_ttft_seconds). Model labels share Metrics' cardinality cap. It
// implements ports.DecodeTTFTMetrics.
type RouterMetrics struct {
	m    *Metrics
	ttft *prometheus.HistogramVec
}

var _ ports.DecodeTTFTMetrics = (*RouterMetrics)(nil)

// NewRouterMetrics registers the series on reg; m caps the model label.
func NewRouterMetrics(reg *prometheus.Registry, m *Metrics) (*RouterMetrics, error) {
	h := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: NameRouterTTFT,
		Help: "Router time to first token in seconds (gRPC PD: the decode leg only).", Buckets: DurationBuckets},
		[]string{LabelRouterType, LabelBackendType, LabelModel, LabelEndpoint})
	if err := reg.Register(h); err != nil {
		return nil, err
	}
	return &RouterMetrics{m: m, ttft: h}, nil
}

// ObserveDecodeTTFT records one gRPC PD decode leg's time to first output.
func (r *RouterMetrics) ObserveDecodeTTFT(model, endpoint string, d time.Duration) {
	r.ttft.WithLabelValues(RouterTypeGRPC, BackendTypePD, r.m.model(model), endpoint).Observe(d.Seconds())
}
