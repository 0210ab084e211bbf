package grpcsim

import (
	"context"
	"errors"
	"sync"
)

// kvPayload is what a simulated KV transfer carries from prefill to decode.
type kvPayload struct {
	Digest       uint64 `json:"digest,string"`
	PromptTokens int    `json:"prompt_tokens"`
	EngineID     string `json:"engine_id"`
	// MM is the media digest the prefill computed the KV with (0 = text only).
	MM uint64 `json:"mm,string,omitempty"`
	// Hash is an EPD embedding's item content hash (hex), for the prefill to check.
	Hash string `json:"hash,omitempty"`
}

var (
	errDuplicate = errors.New("duplicate handoff key")
	errNoKV      = errors.New("no KV under this key")
)

// kvStore is a prefill's handoff registry, keyed by "room:<n>", "nixl:<block id>" or
// "mc:<transfer id>". Either side may arrive first; each key has at most one producer and
// one consumer at a time.
type kvStore struct {
	mu sync.Mutex
	m  map[string]*kvSlot
}

type kvSlot struct {
	payload  kvPayload
	ready    chan struct{} // closed by put
	taken    chan struct{} // closed by a successful take
	put      bool
	claimed  bool
	finished bool
}

func newKVStore() *kvStore { return &kvStore{m: map[string]*kvSlot{}} }

func (s *kvStore) slot(key string) *kvSlot {
	sl := s.m[key]
	if sl == nil {
		sl = &kvSlot{ready: make(chan struct{}), taken: make(chan struct{})}
		s.m[key] = sl
	}
	return sl
}

// put registers the producer's payload under key; errDuplicate when one is registered.
func (s *kvStore) put(key string, p kvPayload) (*kvSlot, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sl := s.slot(key)
	if sl.put {
		return nil, errDuplicate
	}
	sl.put, sl.payload = true, p
	close(sl.ready)
	return sl, nil
}

// take claims key's payload, waiting for the producer until ctx ends (then ctx's error).
// wait=false fails at once with errNoKV when nothing is registered (NIXL blocks exist
// before the decode is told about them). errDuplicate when the key is already claimed.
func (s *kvStore) take(ctx context.Context, key string, wait bool) (kvPayload, error) {
	s.mu.Lock()
	sl := s.m[key]
	if sl == nil && !wait {
		s.mu.Unlock()
		return kvPayload{}, errNoKV
	}
	if sl == nil {
		sl = s.slot(key)
	}
	if sl.claimed {
		s.mu.Unlock()
		return kvPayload{}, errDuplicate
	}
	sl.claimed = true
	s.mu.Unlock()
	select {
	case <-sl.ready:
	case <-ctx.Done():
		s.mu.Lock()
		sl.claimed = false
		if !sl.put && s.m[key] == sl {
			delete(s.m, key)
		}
		s.mu.Unlock()
		return kvPayload{}, ctx.Err()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if sl.finished {
		return kvPayload{}, errNoKV
	}
	close(sl.taken)
	sl.finished = true
	delete(s.m, key)
	return sl.payload, nil
}

// drop removes the producer's slot unless it was taken; it reports whether it was taken.
func (s *kvStore) drop(key string, sl *kvSlot) (taken bool) {
	return s.expire(key, sl, nil)
}

// expire is drop that, when the slot was not taken, also runs onDropped (if not nil)
// before the lock is released: a reader of size never sees the key gone before what
// onDropped counts (a lease expiry's unmatched_rooms).
func (s *kvStore) expire(key string, sl *kvSlot, onDropped func()) (taken bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	select {
	case <-sl.taken:
		return true
	default:
	}
	sl.finished = true
	if s.m[key] == sl {
		delete(s.m, key)
	}
	if onDropped != nil {
		onDropped()
	}
	return false
}

// size is the number of live keys (leak checks in tests).
func (s *kvStore) size() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.m)
}
