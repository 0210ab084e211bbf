package policy

import (
	"github.com/smg-go/smg/domain/wire"
	"github.com/smg-go/smg/domain/worker"
)

// Random picks uniformly among the candidates (smg-spec.md §5.1). Stateless.
type Random struct{}

var _ Policy = Random{}

// Name returns "random".
func (Random) Name() string { return wire.PolicyRandom }

// NeedsText returns false.
func (Random) NeedsText() bool { return false }

// Select returns a uniform random index, or -1 for no candidates.
func (Random) Select(c []*worker.Live, _ *Request) int { return randomIndex(c) }
