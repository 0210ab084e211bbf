// Package health runs the periodic worker health checks (smg-spec.md §3.5): one schedule
// for every registered worker (a single timer-driven scheduler and a bounded set of probes
// in flight), a per-worker state machine over consecutive successes and failures,
// and the resulting status written through ports.WorkerStore.SetStatus.
package health

import "github.com/smg-go/smg/domain/worker"

// Thresholds are the state machine's limits, in probes: Success consecutive successes make a
// pending or not_ready worker ready; Failure consecutive failures make a ready worker
// not_ready, 3×Failure make a not_ready worker failed, and 10×Failure probes while pending
// (successes or failures) make a pending worker failed (smg-spec.md §3.5, defaults 2 and 3).
type Thresholds struct {
	Success int
	Failure int
}

// Counters is one worker's probe history as the state machine needs it.
type Counters struct {
	// Successes and Failures are the current streaks (one of them is always 0 after a probe).
	Successes, Failures int
	// PendingProbes counts every probe (success or failure) made while the worker was pending.
	PendingProbes int
}

// Transition applies one probe result (ok = 2xx within the timeout) to status s and returns
// the next status and counters (smg-spec.md §3.5 compute_next_status). failed is terminal and
// draining is left alone; neither is probed by the Checker. Thresholds below 1 count as 1.
func Transition(s worker.Status, c Counters, ok bool, t Thresholds) (worker.Status, Counters) {
	succ, fail := max(t.Success, 1), max(t.Failure, 1)
	if s == worker.StatusFailed || s == worker.StatusDraining {
		return s, c
	}
	if s == worker.StatusPending {
		c.PendingProbes++
	}
	if ok {
		c.Failures = 0
		c.Successes++
		if (s == worker.StatusPending || s == worker.StatusNotReady) && c.Successes >= succ {
			return worker.StatusReady, c
		}
	} else {
		c.Successes = 0
		c.Failures++
		switch {
		case s == worker.StatusReady && c.Failures >= fail:
			return worker.StatusNotReady, c
		case s == worker.StatusNotReady && c.Failures >= 3*fail:
			return worker.StatusFailed, c
		}
	}
	if s == worker.StatusPending && c.PendingProbes >= 10*fail {
		return worker.StatusFailed, c
	}
	return s, c
}
