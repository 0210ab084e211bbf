package kvroute

import (
	"sync"
	"time"

	"github.com/smg-go/smg/domain/kvevent"
	"github.com/smg-go/smg/domain/kvindex"
)

// DefaultSpeculativeTTL is how long a speculative entry lives (llm-d's precise prefix
// cache scorer keeps its speculative entries 2 s).
const DefaultSpeculativeTTL = 2 * time.Second

// specRecord is one speculative entry: worker holds the first blocks of a prompt under
// model until at, named by the synthetic engine hashes [first, first+n).
type specRecord struct {
	worker, model string
	first         uint64
	n             int
	at            time.Time
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
	fifo []specRecord
}

func newSpeculation(ttl time.Duration, maxBlocks int, now func() time.Time) *speculation {
	return &speculation{ttl: ttl, idx: kvindex.New(kvindex.Options{MaxBlocks: maxBlocks}), now: now}
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
	s.fifo = append(s.fifo, specRecord{worker: worker, model: model, first: first, n: n, at: now.Add(s.ttl)})
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
	kept := s.fifo[:0]
	for _, r := range s.fifo {
		if r.worker != worker {
			kept = append(kept, r)
		}
	}
	clear(s.fifo[len(kept):])
	s.fifo = kept
}

func (s *speculation) expireLocked(now time.Time) {
	i := 0
	for ; i < len(s.fifo) && !now.Before(s.fifo[i].at); i++ {
		r := s.fifo[i]
		hashes := make([]uint64, r.n)
		for j := range hashes {
			hashes[j] = r.first + uint64(j)
		}
		s.idx.Apply(r.worker, r.model, kvevent.Event{Kind: kvevent.Removed, Removed: hashes})
	}
	if i > 0 {
		clear(s.fifo[:i])
		s.fifo = s.fifo[i:]
	}
}
