// Package breaker holds the per-worker circuit breakers (smg-spec.md §3.6; seed "Failures,
// Cancellation, and Streaming"): one sony/gobreaker v2 breaker per registered worker,
// installed on the worker as its worker.Gate, so an open breaker makes the worker
// unavailable to selection (503 no_available_workers naming the leg, never a one-leg
// dispatch). A Set records dispatch outcomes (it implements dispatch.OutcomeRecorder) and
// follows the worker store to attach and drop breakers.
package breaker

import (
	"sync/atomic"
	"time"

	"github.com/sony/gobreaker/v2"

	"github.com/smg-go/smg/domain/worker"
)

// State is a breaker state. The values are those of the smg_worker_cb_state gauge
// (smg-spec.md §7.3): 0 closed, 1 open, 2 half_open.
type State int

const (
	// StateClosed lets requests through and counts consecutive failures.
	StateClosed State = 0
	// StateOpen rejects requests (the worker is unavailable) until the open timeout passes.
	StateOpen State = 1
	// StateHalfOpen lets no client request through: the gateway's canaries probe the
	// worker (Probe); SuccessThreshold consecutive passing canaries close the breaker, a
	// failing one opens it again.
	StateHalfOpen State = 2
)

// String is the label value of smg_worker_cb_transitions_total{from,to}: "closed", "open"
// or "half_open" (smg-spec.md §7.3).
func (s State) String() string {
	switch s {
	case StateOpen:
		return "open"
	case StateHalfOpen:
		return "half_open"
	}
	return "closed"
}

func fromGo(s gobreaker.State) State {
	switch s {
	case gobreaker.StateOpen:
		return StateOpen
	case gobreaker.StateHalfOpen:
		return StateHalfOpen
	}
	return StateClosed
}

// Settings are the breaker thresholds (smg-spec.md §3.6, §8.3).
type Settings struct {
	// FailureThreshold is the number of consecutive failures that opens a closed breaker
	// (--cb-failure-threshold, default 10). Values below 1 are taken as 1.
	FailureThreshold int
	// SuccessThreshold is the number of consecutive successes that closes a half-open
	// breaker (--cb-success-threshold, default 3). Values below 1 are taken as 1.
	SuccessThreshold int
	// Timeout is how long a breaker stays open before it goes half-open
	// (--cb-timeout-duration-secs, default 60 s).
	Timeout time.Duration
	// Disabled never opens a breaker (--disable-circuit-breaker: SMG sets the failure
	// threshold to u32::MAX); outcomes are still counted.
	Disabled bool
	// TimeoutFailureThreshold is the number of Timeout outcomes since the last success that
	// opens a closed breaker (--cb-timeout-failure-threshold, default 3): a hung worker costs
	// a whole leg deadline per attempt. 0 takes FailureThreshold.
	TimeoutFailureThreshold int
	// MaxEjectionPercent caps the share of one role's workers (prefill, decode, regular)
	// whose breakers a Set lets be open or half-open at once (--cb-max-ejection-percent,
	// default 50; Envoy's max_ejection_percent). At least one worker of a role may always be
	// ejected; 0 (or more than 100) means 100: no cap. Ignored by a Breaker built alone with
	// New.
	MaxEjectionPercent int
}

func (s Settings) normalized() Settings {
	if s.TimeoutFailureThreshold <= 0 {
		s.TimeoutFailureThreshold = s.FailureThreshold
	}
	s.TimeoutFailureThreshold = max(s.TimeoutFailureThreshold, 1)
	if s.MaxEjectionPercent <= 0 || s.MaxEjectionPercent > 100 {
		s.MaxEjectionPercent = 100
	}
	s.FailureThreshold = max(s.FailureThreshold, 1)
	s.SuccessThreshold = max(s.SuccessThreshold, 1)
	if s.Timeout <= 0 {
		s.Timeout = 60 * time.Second
	}
	return s
}

// Breaker is one worker's circuit breaker. It implements worker.Gate. All methods are safe
// for concurrent use.
type Breaker struct {
	worker string // the worker URL, the metrics label
	cb     *gobreaker.TwoStepCircuitBreaker[struct{}]
	m      Metrics
	// state mirrors the gobreaker state (updated in OnStateChange), so Allow answers a
	// closed breaker without taking the gobreaker mutex.
	state atomic.Int32
	// openUntil is when an open breaker may turn half-open (unix ns), read without a lock.
	openUntil atomic.Int64
	timeout   time.Duration
	// timeouts counts Timeout outcomes since the last success or state change.
	timeouts atomic.Int32
	// pool is the ejection budget of the worker's role (nil: unlimited), set before the
	// breaker is shared.
	pool *pool
	// eject makes the next failure trip a closed breaker (Eject), within the pool's budget.
	eject atomic.Bool
}

// New builds a closed breaker for the worker at url; m may be nil.
func New(url string, s Settings, m Metrics) *Breaker {
	s = s.normalized()
	if m == nil {
		m = nopMetrics{}
	}
	return newBreaker(url, s, m, nil)
}

// newBreaker builds a closed breaker whose openings are granted by p (nil: always).
func newBreaker(url string, s Settings, m Metrics, p *pool) *Breaker {
	b := &Breaker{worker: url, m: m, timeout: s.Timeout, pool: p}
	failures, timeouts, disabled := uint32(s.FailureThreshold), int32(s.TimeoutFailureThreshold), s.Disabled
	b.cb = gobreaker.NewTwoStepCircuitBreaker[struct{}](gobreaker.Settings{
		Name: url,
		// MaxRequests is gobreaker's half-open budget: that many consecutive successes close
		// the breaker (any failure reopens it).
		MaxRequests: uint32(s.SuccessThreshold),
		Interval:    0, // never clear the closed-state counts: consecutive counting only
		Timeout:     s.Timeout,
		ReadyToTrip: func(c gobreaker.Counts) bool {
			if disabled || (c.ConsecutiveFailures < failures && b.timeouts.Load() < timeouts && !b.eject.Load()) {
				return false
			}
			return b.pool.reserve(b)
		},
		OnStateChange: func(_ string, from, to gobreaker.State) { b.changed(fromGo(from), fromGo(to)) },
	})
	m.SetCBState(url, int(StateClosed))
	return b
}

// changed runs under the gobreaker mutex on every transition.
func (b *Breaker) changed(from, to State) {
	b.timeouts.Store(0)
	if to == StateClosed {
		b.pool.release(b)
	}
	if to == StateOpen {
		b.openUntil.Store(time.Now().Add(b.timeout).UnixNano())
	}
	b.state.Store(int32(to))
	if (from == StateClosed) != (to == StateClosed) {
		worker.AvailabilityChanged() // Allow's answer changed: selection's cached views rebuild
	}
	b.m.SetCBState(b.worker, int(to))
	b.m.IncCBTransition(b.worker, from.String(), to.String())
}

// Allow implements worker.Gate: true only while the breaker is closed. It is called for
// every candidate on every selection, so it answers from an atomic. A half-open breaker
// takes no client request: its probes are the gateway's canaries (ProbeDue, Probe), never a
// client's request.
func (b *Breaker) Allow() bool { return State(b.state.Load()) == StateClosed }

// ProbeDue reports whether the breaker waits for a canary: open with its timeout passed
// (it turns half-open here, smg-spec.md §3.6: on the first state read after the timeout),
// or half-open.
func (b *Breaker) ProbeDue() bool {
	switch State(b.state.Load()) {
	case StateClosed:
		return false
	case StateOpen:
		if time.Now().UnixNano() < b.openUntil.Load() {
			return false
		}
	}
	return b.cb.State() == gobreaker.StateHalfOpen
}

// Probe applies one canary's result to a half-open breaker: SuccessThreshold consecutive
// passes close it, a failure opens it again. It does nothing unless ProbeDue.
func (b *Breaker) Probe(pass bool) {
	if !b.ProbeDue() {
		return
	}
	done, err := b.cb.Allow()
	if err != nil {
		return
	}
	if pass {
		b.m.IncCBOutcome(b.worker, Success.String())
		done(nil)
		return
	}
	b.m.IncCBOutcome(b.worker, Failure.String())
	done(errFailure)
}

// Eject opens a closed breaker at once (a worker the watchdog found stalled and whose
// canary failed), within the role's ejection budget (Settings.MaxEjectionPercent) and
// unless the breakers are disabled. It reports whether the breaker is open afterwards.
func (b *Breaker) Eject() bool {
	if State(b.state.Load()) == StateClosed {
		b.eject.Store(true)
		if done, err := b.cb.Allow(); err == nil {
			b.m.IncCBOutcome(b.worker, Timeout.String())
			done(errFailure)
		}
		b.eject.Store(false)
	}
	return State(b.state.Load()) != StateClosed
}

// State returns the current state (an open breaker past its timeout reads half-open).
func (b *Breaker) State() State { return fromGo(b.cb.State()) }

// Worker is the URL of the breaker's worker.
func (b *Breaker) Worker() string { return b.worker }

// Record applies one classified outcome of a client's leg. Ignored outcomes change nothing;
// outcomes that arrive while the breaker is open or half-open (legs dispatched before it
// opened) are counted in smg_worker_cb_outcomes_total but do not move the breaker: only
// canaries probe a half-open breaker (Probe).
func (b *Breaker) Record(o Outcome) {
	if o == Ignored {
		return
	}
	b.m.IncCBOutcome(b.worker, o.String())
	if State(b.state.Load()) != StateClosed {
		return
	}
	done, err := b.cb.Allow()
	if err != nil {
		return // open (or half-open budget spent): the outcome is late, not a probe
	}
	switch o {
	case Success:
		b.timeouts.Store(0)
		done(nil)
	case Timeout:
		b.timeouts.Add(1)
		done(errFailure)
	default:
		done(errFailure)
	}
}

type failure struct{}

func (failure) Error() string { return "leg failed" }

var errFailure error = failure{}
