// Package admission is the decode admission window (seed "Decode Admission Window (gRPC)",
// applied to the HTTP PD path as well by issue #8): before a PD dispatch goes out, one slot
// per backend request is claimed on the decode worker within its running window; a full
// window waits up to --pd-admission-wait-secs (default 30 s; 0 sheds at once) and then
// sheds with 503 worker_overload_protection_shed and a Retry-After header. Decode workers
// without a window (vLLM) are not gated.
//
// The package is pure: it reads windows from worker labels and decides admit, wait or shed.
// Counting the slots is ports.SlotCounter's job, waiting app/admission's.
package admission

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/smg-go/smg/domain/errs"
	"github.com/smg-go/smg/domain/wire"
	"github.com/smg-go/smg/domain/worker"
)

// DefaultWait is the default of --pd-admission-wait-secs (seed "Decode Admission Window").
const DefaultWait = 30 * time.Second

// MaxRetryAfterSecs caps the Retry-After of a shed, in seconds (the load-monitor interval
// SMG uses for its overload sheds, smg-spec.md §5.11).
const MaxRetryAfterSecs = 10

// ParseWindow parses a max_running_requests value: a positive decimal integer (the engine's
// --max-running-requests / --max-num-seqs). Errors name the accepted form.
func ParseWindow(s string) (int, error) {
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil || n < 1 {
		return 0, fmt.Errorf("%s must be a positive integer (got %q)", wire.LabelMaxRunningRequests, s)
	}
	return n, nil
}

// WindowOf returns the running window of a decode worker: its max_num_seqs label (TokenSpeed's
// --max-num-seqs, reported over gRPC), else its max_running_requests label, set at
// registration or filled from what the engine reports (SGLang max_running_requests) — SMG's
// Worker::max_running_requests order (grpc.md §1.2). gated is false when neither is a
// positive integer: such workers are not gated (seed: "Decode workers that report no window,
// such as vLLM, are not gated").
func WindowOf(w worker.Worker) (window int, gated bool) {
	for _, key := range []string{wire.LabelMaxNumSeqs, wire.LabelMaxRunningRequests} {
		if s, ok := w.Label(key); ok {
			if n, err := ParseWindow(s); err == nil {
				return n, true
			}
		}
	}
	return 0, false
}

// Decision is the outcome of one admission step.
type Decision int

// The decisions.
const (
	// Admit: the slots were claimed; dispatch.
	Admit Decision = iota
	// Wait: the window is full and wait budget remains; wait for a release, then claim again.
	Wait
	// Shed: answer 503 worker_overload_protection_shed (ShedError).
	Shed
	// Refuse: the dispatch needs more slots than the whole window, so no wait can admit
	// it: answer 400 admission_window_exceeded (TooLargeError).
	Refuse
)

// String returns "admit", "wait" or "shed".
func (d Decision) String() string {
	switch d {
	case Admit:
		return "admit"
	case Wait:
		return "wait"
	case Shed:
		return "shed"
	case Refuse:
		return "refuse"
	}
	return "Decision(" + strconv.Itoa(int(d)) + ")"
}

// Decide returns the next step for a dispatch that needs n slots on a decode worker with
// window slots: Admit when the claim succeeded; Refuse when n exceeds the window (it can
// never fit: a client error, not a load shed); Shed when the time already waited reached the
// budget (budget 0 sheds at once); else Wait.
func Decide(claimed bool, n, window int, waited, budget time.Duration) Decision {
	switch {
	case claimed:
		return Admit
	case n > window:
		return Refuse
	case waited >= budget:
		return Shed
	}
	return Wait
}

// Remaining is how much longer a dispatch that already waited may wait (never negative).
func Remaining(waited, budget time.Duration) time.Duration {
	return max(budget-waited, 0)
}

// RetryAfterSecs is the Retry-After of a shed, in whole seconds: the wait budget rounded
// up, at least 1 and at most MaxRetryAfterSecs. A client that retries sooner than the
// budget would most likely find the window still full.
func RetryAfterSecs(budget time.Duration) int {
	s := int(math.Ceil(budget.Seconds()))
	return min(max(s, 1), MaxRetryAfterSecs)
}

// ShedError is the seed's shed: 503 worker_overload_protection_shed, Retry-After set,
// not retryable (sheds are never retried by the gateway), leg "decode". The message names
// the decode worker, its window and how long the dispatch waited.
func ShedError(workerURL string, window int, waited, budget time.Duration) *errs.Error {
	why := fmt.Sprintf("its admission window of %d stayed full for %s", window, waited.Round(time.Millisecond))
	return &errs.Error{
		Status:         503,
		Code:           wire.CodeOverloadShed,
		Message:        fmt.Sprintf("Decode worker '%s' is at capacity: %s", workerURL, why),
		RetryAfterSecs: RetryAfterSecs(budget),
		Leg:            "decode",
	}
}

// TooLargeError is the answer to a dispatch that needs n slots on a decode worker whose
// whole window is smaller (Refuse): 400 admission_window_exceeded, not retryable (waiting
// or retrying cannot admit it), leg "decode". The message names the worker, both numbers
// and the remedy.
func TooLargeError(workerURL string, n, window int) *errs.Error {
	return &errs.Error{
		Status: 400,
		Code:   wire.CodeAdmissionWindowExceeded,
		Message: fmt.Sprintf("The request needs %d decode slots (one per prompt and sample), more than the admission window of %d "+
			"of decode worker '%s': it can never be admitted; send at most %d prompts × n per request", n, window, workerURL, window),
		Leg: "decode",
	}
}
