package policy

import (
	"sync/atomic"

	"github.com/smg-go/smg/domain/wire"
	"github.com/smg-go/smg/domain/worker"
)

// RoundRobin rotates through the candidates (smg-spec.md §5.2): an atomic counter c, starting
// at 0 and incremented per call, picks candidates[c mod len(candidates)]. The counter belongs
// to the instance, so each leg rotates independently.
type RoundRobin struct {
	next atomic.Uint64
}

var _ Policy = (*RoundRobin)(nil)

// Name returns "round_robin".
func (*RoundRobin) Name() string { return wire.PolicyRoundRobin }

// NeedsText returns false.
func (*RoundRobin) NeedsText() bool { return false }

// Select returns the next index in rotation, or -1 for no candidates (the counter does not
// advance then).
func (p *RoundRobin) Select(c []*worker.Live, _ *Request) int {
	if len(c) == 0 {
		return -1
	}
	n := p.next.Add(1) - 1
	return int(n % uint64(len(c)))
}
