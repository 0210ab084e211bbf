package metrics

import "github.com/prometheus/client_golang/prometheus"

// NameSharedStateFallbacks counts shared-state calls (admission slots, sticky keys) served
// from the per-instance memory store because Redis did not answer (issue #8; not a seed
// series).
const NameSharedStateFallbacks = "smg_shared_state_fallbacks_total"

// NewFallbackCounter registers smg_shared_state_fallbacks_total{store,op} on reg and returns
// the func that increments it; store is "slots" or "sticky", op the call ("claim", "get", …).
func NewFallbackCounter(reg *prometheus.Registry) (func(store, op string), error) {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: NameSharedStateFallbacks,
		Help: "Shared-state calls served by the per-instance memory store while Redis was unavailable.",
	}, []string{"store", "op"})
	if err := reg.Register(c); err != nil {
		return nil, err
	}
	return func(store, op string) { c.WithLabelValues(store, op).Inc() }, nil
}
