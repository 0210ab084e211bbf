package dispatch

import "github.com/smg-go/smg/domain/worker"

// metricModel is the model label of a dispatch's PD series: the request's model, or for a
// request without one (a /generate body needs none) the model the selected prefill serves,
// so the seed's `sum by (le, model)` names the served model instead of an empty one.
func metricModel(model string, p *worker.Live) string {
	if model != "" {
		return model
	}
	return p.ServedModel()
}
