package ports

import "net/http"

// Route is a data-plane HTTP route (an LLM API such as POST /v1/chat/completions) mounted on
// the gateway's main mux next to the huma admin API. Providers put Routes into the fx value
// group "routes"; the server mounts each Pattern (Go 1.22 ServeMux syntax, e.g.
// "POST /v1/chat/completions") with its Handler.
type Route struct {
	Pattern string
	Handler http.Handler
}

// HealthMetrics records health-check outcomes (smg-spec.md §3.5):
// smg_worker_health_checks_total{worker_type,result} and smg_worker_health{worker}.
type HealthMetrics interface {
	// ObserveHealthCheck counts one probe; result is "success" or "failure".
	ObserveHealthCheck(workerType, result string)
	// SetWorkerHealth sets smg_worker_health{worker=url} to 1 (ready) or 0.
	SetWorkerHealth(workerURL string, healthy bool)
}
