package worker

import "sync/atomic"

// availEpoch counts the changes of any Live's availability in the process (status, stall
// suspicion, gate installed, gate state), so a view of the available workers built at
// epoch e stays exact while AvailabilityEpoch still returns e.
var availEpoch atomic.Uint64

// AvailabilityEpoch is a counter that moves whenever the answer of Available may have
// changed for some Live in the process: SetStatus with a new status, SetSuspect with a new
// mark, SetGate, and a gate calling AvailabilityChanged. A caller caching which workers are
// available reads it before reading the workers and rebuilds when it moved; one atomic load,
// so the cache check costs the same for 2 or 4,096 workers.
func AvailabilityEpoch() uint64 { return availEpoch.Load() }

// AvailabilityChanged moves AvailabilityEpoch. A Gate whose Allow answer changes (a circuit
// breaker opening or closing) must call it after the change is visible to Allow, or cached
// views of the available workers keep the old answer.
func AvailabilityChanged() { availEpoch.Add(1) }
