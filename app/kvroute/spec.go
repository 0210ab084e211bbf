package kvroute

import (
	"sync"
	"time"

	"github.com/smg-go/smg/domain/kvevent"
	"github.com/smg-go/smg/domain/kvindex"
)

// DefaultSpeculativeTTL bounds how long a speculative entry lives when its worker's events
// never confirm it. llm-d's precise prefix cache scorer keeps its entries 2 s, but an entry
// here ends as soon as the worker's own events store the prompt's last block (confirm), so
// the bound only has to outlast a prefill queued behind others: with 2 s, a loaded fleet
// (TTFT of seconds) lost the entries before the events came, and four replicas scattered
// one prompt's followers again (docs/fleet-bench.md).
const DefaultSpeculativeTTL = 30 * time.Second

// specRecord is one speculative entry: worker holds the first n blocks of tokens under
// model until at (or until confirmed), named by the synthetic engine hashes [first, first+n).
type specRecord struct {
	worker, model string
	tokens        []uint32 // the prompt's first n×blockSize tokens
	first         uint64
	n             int
	at            time.Time
	// done: confirmed (its blocks already left the index); expiry skips it.
	done bool
}

// SpecCounts are one worker's speculative entries by outcome since start.
type SpecCounts struct {
	// Confirmed: the worker's events stored the entry's last block before it expired;
	// Expired: they did not (the prompt was not computed there, was evicted at once, or the
	// events lag more than the TTL); Dropped: cleared with the worker's entries.
	Confirmed, Expired, Dropped uint64
	// ConfirmSeconds is the sum of the confirmed entries' ages at confirmation.
	ConfirmSeconds float64
}

// speculation keeps the speculative entries in an Index of their own (so a prompt's
// speculative prefix matches exactly as an event-driven one does) and expires them in
// arrival order. Safe for concurrent use.
type speculation struct {
	ttl time.Duration
	idx *kvindex.Index
	now func() time.Time

	mu   sync.Mutex
	next uint64
	fifo []*specRecord
	// open are the unconfirmed, unexpired records by worker, oldest first.
	open   map[string][]*specRecord
	counts map[string]*SpecCounts
}

func newSpeculation(ttl time.Duration, maxBlocks int, now func() time.Time) *speculation {
	return &speculation{ttl: ttl, idx: kvindex.New(kvindex.Options{MaxBlocks: maxBlocks}), now: now,
		open: map[string][]*specRecord{}, counts: map[string]*SpecCounts{}}
}

func (s *speculation) countsLocked(worker string) *SpecCounts {
	c := s.counts[worker]
	if c == nil {
		c = &SpecCounts{}
		s.counts[worker] = c
	}
	return c
}

// add records tokens' full blocks of blockSize as held by worker under model.
func (s *speculation) add(worker, model string, blockSize int, tokens []uint32) {
	n := len(tokens) / blockSize
	if s.ttl <= 0 || n == 0 {
		return
	}
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.expireLocked(now)
	first := s.next
	s.next += uint64(n)
	ev := kvevent.Event{Kind: kvevent.Stored, BlockSize: blockSize, Blocks: make([]kvevent.Block, n)}
	for i := range n {
		ev.Blocks[i] = kvevent.Block{EngineHash: first + uint64(i), Tokens: tokens[i*blockSize : (i+1)*blockSize]}
	}
	s.idx.Apply(worker, model, ev)
	r := &specRecord{worker: worker, model: model, tokens: tokens[:n*blockSize], first: first, n: n, at: now.Add(s.ttl)}
	s.fifo = append(s.fifo, r)
	s.open[worker] = append(s.open[worker], r)
}

// confirm ends worker's open entries that held reports as stored by the worker itself
// (held(model, tokens): the event index holds every token of the entry for worker). It
// runs after each event batch of the worker that stored blocks.
func (s *speculation) confirm(worker string, held func(model string, tokens []uint32) bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	open := s.open[worker]
	if len(open) == 0 {
		return
	}
	now := s.now()
	kept := open[:0]
	for _, r := range open {
		if !held(r.model, r.tokens) {
			kept = append(kept, r)
			continue
		}
		s.removeLocked(r)
		c := s.countsLocked(worker)
		c.Confirmed++
		c.ConfirmSeconds += now.Sub(r.at.Add(-s.ttl)).Seconds()
	}
	clear(open[len(kept):])
	if len(kept) == 0 {
		delete(s.open, worker)
	} else {
		s.open[worker] = kept
	}
}

// removeLocked drops r's blocks from the speculative index and marks it done.
func (s *speculation) removeLocked(r *specRecord) {
	hashes := make([]uint64, r.n)
	for j := range hashes {
		hashes[j] = r.first + uint64(j)
	}
	s.idx.Apply(r.worker, r.model, kvevent.Event{Kind: kvevent.Removed, Removed: hashes})
	r.done, r.tokens = true, nil
}

// stats returns a copy of the per-worker outcome counts.
func (s *speculation) stats() map[string]SpecCounts {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]SpecCounts, len(s.counts))
	for w, c := range s.counts {
		out[w] = *c
	}
	return out
}

// match is the speculative entries' Index.Match after dropping the expired ones.
func (s *speculation) match(model string, tokens []uint32) map[string]kvindex.Hit {
	s.mu.Lock()
	s.expireLocked(s.now())
	s.mu.Unlock()
	return s.idx.Match(model, tokens)
}

// drop forgets every speculative entry of worker.
func (s *speculation) drop(worker string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.idx.RemoveWorker(worker)
	if n := len(s.open[worker]); n > 0 {
		s.countsLocked(worker).Dropped += uint64(n)
	}
	delete(s.open, worker)
	kept := s.fifo[:0]
	for _, r := range s.fifo {
		if r.worker != worker {
			kept = append(kept, r)
		}
	}
	clear(s.fifo[len(kept):])
	s.fifo = kept
}

// forget drops worker's counts too (the worker left the registry).
func (s *speculation) forget(worker string) {
	s.drop(worker)
	s.mu.Lock()
	delete(s.counts, worker)
	s.mu.Unlock()
}

func (s *speculation) expireLocked(now time.Time) {
	i := 0
	for ; i < len(s.fifo) && !now.Before(s.fifo[i].at); i++ {
		r := s.fifo[i]
		if r.done {
			continue
		}
		s.removeLocked(r)
		s.countsLocked(r.worker).Expired++
		open := s.open[r.worker]
		for j, o := range open {
			if o == r {
				open = append(open[:j], open[j+1:]...)
				break
			}
		}
		if len(open) == 0 {
			delete(s.open, r.worker)
		} else {
			s.open[r.worker] = open
		}
	}
	if i > 0 {
		clear(s.fifo[:i])
		s.fifo = s.fifo[i:]
	}
}
