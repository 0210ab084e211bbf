package kvevents

import (
	"fmt"
	"strings"
)

// Runtime fault kinds of the event stream (POST /sim/fault?kind=…). Each withholds or
// spoils live delivery only: the replay buffer always keeps the real batch, so a
// subscriber that notices can recover through replay.
const (
	// FaultGap withholds the next batch from the PUB socket and the live gRPC streams:
	// subscribers see its sequence number skipped (as after a PUB high-water-mark drop).
	// One-shot.
	FaultGap = "kv-events-gap"
	// FaultStall withholds every batch from live delivery until cleared; sequence
	// numbers and the replay buffer keep advancing, so the first batch after the clear
	// arrives after a gap.
	FaultStall = "kv-events-stall"
	// FaultGarbage sends the next batch's PUB message with an undecodable payload (its
	// sequence number and topic intact) and ends the live gRPC streams with
	// ErrUndecodable. One-shot.
	FaultGarbage = "kv-events-garbage"
)

// IsFault reports whether spec names a KV event fault (the "kv-events-" kinds).
func IsFault(spec string) bool { return strings.HasPrefix(spec, "kv-events-") }

type faultState struct {
	gap, stall, garbage bool
}

// take consumes the faults that apply to the batch being emitted: live reports whether
// it is delivered live, garbage whether its payload is spoiled.
func (f *faultState) take() (live, garbage bool) {
	switch {
	case f.stall:
		return false, false
	case f.gap:
		f.gap = false
		return false, false
	case f.garbage:
		f.garbage = false
		return true, true
	}
	return true, false
}

// SetFault arms a fault: FaultGap, FaultStall or FaultGarbage. Other kinds are an error.
func (p *Publisher) SetFault(kind string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch kind {
	case FaultGap:
		p.faults.gap = true
	case FaultStall:
		p.faults.stall = true
	case FaultGarbage:
		p.faults.garbage = true
	default:
		return fmt.Errorf("kv events: fault %q: want %s, %s or %s", kind, FaultGap, FaultStall, FaultGarbage)
	}
	return nil
}

// ClearFaults disarms every fault (a stall ends; pending one-shot faults are dropped).
func (p *Publisher) ClearFaults() {
	p.mu.Lock()
	p.faults = faultState{}
	p.mu.Unlock()
}
