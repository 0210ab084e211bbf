package worker

import "sync/atomic"

// Gate decides whether a worker may take new requests beyond its status, for example a
// circuit breaker. Allow must be fast: it is called for every candidate on every selection.
type Gate interface {
	Allow() bool
}

// Live is a registered worker with its live state. The registration is immutable; status and
// in-flight load are atomics, so selection reads them without locks. Live values are shared
// by the store, the health checker and every dispatch: never copy one.
type Live struct {
	Worker
	status atomic.Value // Status
	load   atomic.Int64
	gate   atomic.Pointer[gateBox]
}

type gateBox struct{ g Gate }

// NewLive wraps w with the given initial status and zero load.
func NewLive(w Worker, s Status) *Live {
	l := &Live{Worker: w}
	l.status.Store(s)
	return l
}

// Status returns the current lifecycle status.
func (l *Live) Status() Status { return l.status.Load().(Status) }

// SetStatus sets the lifecycle status.
func (l *Live) SetStatus(s Status) { l.status.Store(s) }

// SetGate installs a gate (e.g. a circuit breaker); nil removes it.
func (l *Live) SetGate(g Gate) {
	if g == nil {
		l.gate.Store(nil)
		return
	}
	l.gate.Store(&gateBox{g})
}

// Healthy reports whether the status is ready.
func (l *Live) Healthy() bool { return l.Status() == StatusReady }

// Available reports whether new requests may be routed here: ready and the gate (if any) allows.
func (l *Live) Available() bool {
	if !l.Healthy() {
		return false
	}
	if b := l.gate.Load(); b != nil {
		return b.g.Allow()
	}
	return true
}

// Load is the number of in-flight requests the gateway has on this worker.
func (l *Live) Load() int64 { return l.load.Load() }

// Acquire adds one in-flight request and returns a release func that is safe to call more
// than once (only the first call counts).
func (l *Live) Acquire() (release func()) {
	l.load.Add(1)
	var done atomic.Bool
	return func() {
		if done.CompareAndSwap(false, true) {
			l.load.Add(-1)
		}
	}
}
