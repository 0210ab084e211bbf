package breaker

// Metrics receives the breaker series (smg-spec.md §3.6, §7.3); adapters/metrics implements
// it with Prometheus. worker is the worker URL. Every method must be cheap and safe for
// concurrent use; SetCBState and IncCBTransition are called under a breaker's lock and must
// not call back into the breaker.
type Metrics interface {
	// SetCBState sets smg_worker_cb_state{worker} to state (0 closed, 1 open, 2 half_open).
	SetCBState(worker string, state int)
	// IncCBTransition increments smg_worker_cb_transitions_total{worker,from,to}; from and to
	// are "closed", "open" or "half_open".
	IncCBTransition(worker, from, to string)
	// IncCBOutcome increments smg_worker_cb_outcomes_total{worker,outcome}; outcome is
	// "success" or "failure".
	IncCBOutcome(worker, outcome string)
	// ForgetCB deletes every breaker series of a removed worker.
	ForgetCB(worker string)
}

type nopMetrics struct{}

func (nopMetrics) SetCBState(string, int)                 {}
func (nopMetrics) IncCBTransition(string, string, string) {}
func (nopMetrics) IncCBOutcome(string, string)            {}
func (nopMetrics) ForgetCB(string)                        {}
