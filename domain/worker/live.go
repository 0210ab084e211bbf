package worker

import (
	"sync"
	"sync/atomic"
	"time"
	"unsafe"
)

// Gate decides whether a worker may take new requests beyond its status, for example a
// circuit breaker. Allow must be fast. Selection caches the available workers, so a gate
// whose answer changes must call AvailabilityChanged after the change (SetGate itself
// counts as a change).
type Gate interface {
	Allow() bool
}

// Live is a registered worker with its live state. The registration is immutable; status and
// in-flight load are atomics, so selection reads them without locks. Live values are shared
// by the store, the health checker and every dispatch: never copy one.
//
// Layout: what a selection reads or writes on a candidate (status, load, tokens, boards,
// gate, stall mark) comes first and fills exactly one 64-byte cache line, and the struct is
// padded to an odd number of 64-byte lines, so that (Go allocating it in a size class of
// that size) that line is the object's first: a pick touches one line per worker, not three
// (live_layout_test.go).
type Live struct {
	status    atomic.Pointer[Status]     // one of statuses, or a status outside them (SetStatus)
	load      atomic.Int64               // in-flight requests (Hold)
	promptTok atomic.Int64               // prompt tokens of the legs in flight (tokens.go)
	decodeTok atomic.Int64               // expected decode tokens of the legs in flight
	remoteTok atomic.Int64               // other gateway instances' token load, as last shared
	boards    atomic.Pointer[[]boardRef] // the LoadBoards listing this worker (board.go)
	gate      atomic.Pointer[gateBox]
	suspect   atomic.Bool // the progress watchdog suspects it stalled

	Worker
	liveCold
	_ [livePad]byte
}

// liveCold is the live state no selection reads.
type liveCold struct {
	engineID  atomic.Pointer[string] // refreshed KV engine id; nil = the registered one
	confirmed atomic.Bool            // the last engine-id read completed
	failedAt  atomic.Int64           // unix ns of the latest failure its breaker counted; 0 = none
	queued    atomic.Int64           // requests this replica queues for its decode window (queued.go)
	boardMu   sync.Mutex             // serializes changes of boards
}

// liveHotSize is the size of Live's fields before Worker (one cache line), liveSize the
// size of its fields, and livePad the padding that rounds Live up to an odd number of cache
// lines: Lives then sit at an odd line stride, so their first lines fall in every cache set,
// not only in the even half (an even stride leaves bit 6 of every first line's address at 0).
const (
	cacheLine   = 64
	liveHotSize = cacheLine
	liveSize    = liveHotSize + unsafe.Sizeof(Worker{}) + unsafe.Sizeof(liveCold{})
	livePad     = ((liveSize+cacheLine-1)/cacheLine|1)*cacheLine - liveSize
)

// statuses are the known statuses: a Live points at one of these, so reading its status
// touches the Live's own cache line and this shared table only (Healthy: no dereference).
var statuses = [...]Status{StatusPending, StatusReady, StatusNotReady, StatusFailed, StatusDraining}

// readyIdx is StatusReady's index in statuses.
const readyIdx = 1

// statusRef returns the table entry for s, or a new cell holding s for a status outside the
// table (SetStatus accepts any value and Status returns it as set).
func statusRef(s Status) *Status {
	for i := range statuses {
		if statuses[i] == s {
			return &statuses[i]
		}
	}
	return &s
}

// SetSuspect marks the worker suspected of a stall by the progress watchdog (true) or
// clears the mark (false); a change moves AvailabilityEpoch. A suspect worker takes no new legs (Available) until a canary
// clears it or its breaker ejects it.
func (l *Live) SetSuspect(on bool) {
	if l.suspect.Swap(on) != on {
		AvailabilityChanged()
	}
}

// Suspect reports whether the progress watchdog suspects the worker stalled.
func (l *Live) Suspect() bool { return l.suspect.Load() }

// NoteFailure records that a failure of this worker was counted at t (its circuit breaker
// calls it), for FailedSince.
func (l *Live) NoteFailure(t time.Time) { l.failedAt.Store(t.UnixNano()) }

// FailedSince reports whether a failure was counted after t. A success that is recorded
// late — a vLLM prefill's answer, held until its decode confirmed the handoff — is dropped
// when the worker failed in between (it died after answering): recording it would reset the
// failure streak that ejects the dead worker.
func (l *Live) FailedSince(t time.Time) bool { return l.failedAt.Load() > t.UnixNano() }

type gateBox struct{ g Gate }

// NewLive wraps w with the given initial status and zero load.
func NewLive(w Worker, s Status) *Live {
	l := &Live{Worker: w}
	l.status.Store(statusRef(s))
	return l
}

// Status returns the current lifecycle status ("" for a Live not made by NewLive).
func (l *Live) Status() Status {
	if p := l.status.Load(); p != nil {
		return *p
	}
	return ""
}

// SetStatus sets the lifecycle status (any value; Status returns it as set); a new status
// moves AvailabilityEpoch.
func (l *Live) SetStatus(s Status) {
	if old := l.status.Swap(statusRef(s)); old == nil || *old != s {
		AvailabilityChanged()
	}
}

// SetGate installs a gate (e.g. a circuit breaker); nil removes it. It moves
// AvailabilityEpoch.
func (l *Live) SetGate(g Gate) {
	defer AvailabilityChanged()
	if g == nil {
		l.gate.Store(nil)
		return
	}
	l.gate.Store(&gateBox{g})
}

// Healthy reports whether the status is ready.
func (l *Live) Healthy() bool { return l.status.Load() == &statuses[readyIdx] }

// Available reports whether new requests may be routed here: ready, not suspected of a
// stall, and the gate (if any) allows.
func (l *Live) Available() bool {
	if !l.Healthy() || l.suspect.Load() {
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
	l.Hold()
	var done atomic.Bool
	return func() {
		if done.CompareAndSwap(false, true) {
			l.Unhold()
		}
	}
}

// Hold adds one in-flight request without building a release func; the caller pairs it
// with exactly one Unhold (Acquire is the idempotent form). It moves the worker on the
// LoadBoards that list it.
func (l *Live) Hold() {
	l.load.Add(1)
	l.syncBoards()
}

// Unhold removes one in-flight request added by Hold, and moves the worker on its LoadBoards.
func (l *Live) Unhold() {
	l.load.Add(-1)
	l.syncBoards()
}

// EngineID is the worker's live KV engine id: the last one re-read from the engine
// (SetEngineID), else the registered Worker.KVEngineID. Mooncake handoffs are minted with
// it (grpc.md §1.10).
func (l *Live) EngineID() string {
	if p := l.engineID.Load(); p != nil {
		return *p
	}
	return l.KVEngineID
}

// SetEngineID records an engine id read from the engine and marks the read confirmed. It
// reports whether the id differs from the previous live id.
func (l *Live) SetEngineID(id string) (changed bool) {
	old := l.EngineID()
	l.engineID.Store(&id)
	l.confirmed.Store(true)
	return old != id
}

// EngineIDConfirmed reports whether the last engine-id read completed (grpc.md §1.10: a
// failed or expired read leaves it unconfirmed, so the next successful probe reads again).
func (l *Live) EngineIDConfirmed() bool { return l.confirmed.Load() }

// SetEngineIDConfirmed sets the confirmed flag without changing the id (false before a
// read, true after a read that found no id and kept the previous one).
func (l *Live) SetEngineIDConfirmed(ok bool) { l.confirmed.Store(ok) }
