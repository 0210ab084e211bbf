package kvevents

// verdict is what to do with a batch given the sequence numbers seen so far.
type verdict int

const (
	apply     verdict = iota // next in order (or the first): apply it
	duplicate                // already applied through a replay: drop it
	gap                      // batches were lost before it: recover first
	restart                  // sequence went backwards: the engine restarted
)

// tracker classifies ZMQ sequence numbers (8-byte counters, +1 per batch from 0 at engine
// start; reference §1.3). After a replay, live batches the replay already delivered
// arrive again; they fall in the replay window [first, last] and are duplicates, not a
// restart.
type tracker struct {
	have bool
	last uint64

	window       bool
	winLo, winHi uint64
}

func (t *tracker) classify(seq uint64) verdict {
	switch {
	case !t.have || seq == t.last+1:
		return apply
	case seq > t.last+1:
		return gap
	case t.window && seq >= t.winLo && seq <= t.winHi:
		return duplicate
	}
	return restart
}

func (t *tracker) accept(seq uint64) {
	t.have, t.last = true, seq
	if t.window && seq > t.winHi {
		t.window = false
	}
}

// replayed records that a replay applied the batches from first to the tracker's last.
func (t *tracker) replayed(first uint64) {
	t.window, t.winLo, t.winHi = true, first, t.last
}
