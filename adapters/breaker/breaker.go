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

	"github.com/smg-go/smg/app/config"
)

// State is a breaker state. The values are those of the smg_worker_cb_state gauge
// (smg-spec.md §7.3): 0 closed, 1 open, 2 half_open.
type State int

const (
	// StateClosed lets requests through and counts consecutive failures.
	StateClosed State = 0
	// StateOpen rejects requests (the worker is unavailable) until the open timeout passes.
	StateOpen State = 1
	// StateHalfOpen lets requests through again; SuccessThreshold consecutive successes
	// close the breaker, any failure opens it again.
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
}

// SettingsFrom maps the --cb-* flags of cfg onto Settings. --cb-window-duration-secs is
// accepted by config but unused: the breaker counts consecutive outcomes only (§3.6).
func SettingsFrom(cfg config.Config) Settings {
	return Settings{
		FailureThreshold: cfg.CBFailureThreshold,
		SuccessThreshold: cfg.CBSuccessThreshold,
		Timeout:          cfg.CBTimeout,
		Disabled:         cfg.DisableCircuitBreaker,
	}
}

func (s Settings) normalized() Settings {
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
}

// New builds a closed breaker for the worker at url; m may be nil.
func New(url string, s Settings, m Metrics) *Breaker {
	s = s.normalized()
	if m == nil {
		m = nopMetrics{}
	}
	b := &Breaker{worker: url, m: m, timeout: s.Timeout}
	failures, disabled := uint32(s.FailureThreshold), s.Disabled
	b.cb = gobreaker.NewTwoStepCircuitBreaker[struct{}](gobreaker.Settings{
		Name: url,
		// MaxRequests is gobreaker's half-open budget: that many consecutive successes close
		// the breaker (any failure reopens it).
		MaxRequests: uint32(s.SuccessThreshold),
		Interval:    0, // never clear the closed-state counts: consecutive counting only
		Timeout:     s.Timeout,
		ReadyToTrip: func(c gobreaker.Counts) bool {
			return !disabled && c.ConsecutiveFailures >= failures
		},
		OnStateChange: func(_ string, from, to gobreaker.State) { b.changed(fromGo(from), fromGo(to)) },
	})
	m.SetCBState(url, int(StateClosed))
	return b
}

// changed runs under the gobreaker mutex on every transition.
func (b *Breaker) changed(from, to State) {
	if to == StateOpen {
		b.openUntil.Store(time.Now().Add(b.timeout).UnixNano())
	}
	b.state.Store(int32(to))
	b.m.SetCBState(b.worker, int(to))
	b.m.IncCBTransition(b.worker, from.String(), to.String())
}

// Allow implements worker.Gate: false while the breaker is open. It is called for every
// candidate on every selection, so a closed breaker answers from an atomic; an open
// breaker whose timeout has passed turns half-open here (smg-spec.md §3.6: on the first
// state read after the timeout).
func (b *Breaker) Allow() bool {
	switch State(b.state.Load()) {
	case StateClosed, StateHalfOpen:
		return true
	}
	if time.Now().UnixNano() < b.openUntil.Load() {
		return false
	}
	return b.cb.State() != gobreaker.StateOpen
}

// State returns the current state (an open breaker past its timeout reads half-open).
func (b *Breaker) State() State { return fromGo(b.cb.State()) }

// Worker is the URL of the breaker's worker.
func (b *Breaker) Worker() string { return b.worker }

// Record applies one classified outcome. Ignored outcomes change nothing; outcomes that
// arrive while the breaker is open (requests dispatched before it opened) are counted in
// smg_worker_cb_outcomes_total but do not move the breaker.
func (b *Breaker) Record(o Outcome) {
	if o == Ignored {
		return
	}
	b.m.IncCBOutcome(b.worker, o.String())
	done, err := b.cb.Allow()
	if err != nil {
		return // open (or half-open budget spent): the outcome is late, not a probe
	}
	if o == Success {
		done(nil)
	} else {
		done(errFailure)
	}
}

type failure struct{}

func (failure) Error() string { return "leg failed" }

var errFailure error = failure{}
