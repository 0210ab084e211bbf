package breaker

import (
	"errors"

	"github.com/smg-go/smg/domain/errs"
)

// Outcome is how one leg's result counts against its worker's breaker.
type Outcome int

const (
	// Success resets the consecutive-failure count (closed) or counts towards closing
	// (half-open).
	Success Outcome = iota
	// Failure counts towards opening (closed) or reopens (half-open).
	Failure
	// Ignored changes nothing: a capacity answer (429), not a fault of the worker.
	Ignored
	// Timeout is a Failure of an unresponsive worker (errs.ErrUnresponsive): it also counts
	// towards Settings.TimeoutFailureThreshold, the lower threshold for hung workers.
	Timeout
)

// String is the label value of smg_worker_cb_outcomes_total{outcome}: "success", "failure"
// (smg-spec.md §7.3), or "ignored" (never exported).
func (o Outcome) String() string {
	switch o {
	case Failure, Timeout:
		return "failure"
	case Ignored:
		return "ignored"
	}
	return "success"
}

// Classify maps a leg's result to an Outcome (smg-spec.md §3.6, worker.rs::record_outcome):
// an unresponsive leg (err wraps errs.ErrUnresponsive) is a Timeout; any other transport
// error (err != nil, or no status at all) is a Failure; 429 is in the default
// capacity set and is Ignored; 408, 500, 502, 503 and 504 — the rest of the retryable set —
// are Failures; every other status, every 4xx client fault included, is a Success. A 4xx
// flood therefore never opens a breaker on a healthy worker.
func Classify(status int, err error) Outcome {
	if errors.Is(err, errs.ErrUnresponsive) {
		return Timeout
	}
	if err != nil || status <= 0 {
		return Failure
	}
	switch status {
	case 429:
		return Ignored
	case 408, 500, 502, 503, 504:
		return Failure
	}
	return Success
}
