package worker

import "time"

// HealthConfig holds a worker's health-check overrides, the `health` object of the worker
// spec (smg-spec.md §3.1: timeout_secs, check_interval_secs, success_threshold,
// failure_threshold, disable_health_check, drain_settle_secs). A zero field means "use the
// gateway default" (the --health-* flags); DrainSettle is a pointer because 0 is a valid
// override (remove at once).
type HealthConfig struct {
	// Timeout is the probe timeout; 0 = --health-check-timeout-secs.
	Timeout time.Duration
	// Interval is the time between probes; 0 = --health-check-interval-secs.
	Interval time.Duration
	// SuccessThreshold is the consecutive successes that make a pending or not_ready worker
	// ready; 0 = --health-success-threshold.
	SuccessThreshold int
	// FailureThreshold is the consecutive failures that make a ready worker not_ready
	// (3× that makes a not_ready worker failed); 0 = --health-failure-threshold.
	FailureThreshold int
	// Disable turns probing off for this worker; it is registered ready and never probed.
	Disable bool
	// DrainSettle is how long DELETE keeps a ready worker draining before removal;
	// nil = --drain-settle-secs.
	DrainSettle *time.Duration
}
