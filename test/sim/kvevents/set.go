package kvevents

import (
	"errors"
	"fmt"
)

// Set is one publisher per data-parallel rank of an engine instance, as vLLM and SGLang
// run one publisher per DP rank (vLLM keyed on data_parallel_rank, SGLang on
// attn_dp_rank): rank r binds port + r for PUB and replay and stamps r on its batches.
type Set struct {
	ranks []*Publisher
}

// NewSet starts ranks publishers (ranks < 1 counts as 1) with o, DPRank 0..ranks-1.
// A disabled config returns (nil, nil): the engine publishes nothing, and every method of
// a nil *Set is a no-op (Rank returns nil, SetFault an error).
func NewSet(o Options, ranks int) (*Set, error) {
	if !o.Config.Enabled() {
		return nil, nil
	}
	s := &Set{}
	for r := range max(ranks, 1) {
		o.DPRank = r
		p, err := NewPublisher(o)
		if err != nil {
			_ = s.Close()
			return nil, fmt.Errorf("dp rank %d: %w", r, err)
		}
		s.ranks = append(s.ranks, p)
	}
	return s, nil
}

// Len is the number of ranks (0 for a nil Set).
func (s *Set) Len() int {
	if s == nil {
		return 0
	}
	return len(s.ranks)
}

// Rank is rank r's publisher, nil when r is not a rank of the set (or the set is nil).
func (s *Set) Rank(r int) *Publisher {
	if s == nil || r < 0 || r >= len(s.ranks) {
		return nil
	}
	return s.ranks[r]
}

// SetFault arms kind on every rank; it is an error when the set is nil (events are not
// enabled) or kind is not a KV event fault.
func (s *Set) SetFault(kind string) error {
	if s == nil {
		return errors.New("kv events are not enabled (start with --kv-events-config)")
	}
	for _, p := range s.ranks {
		if err := p.SetFault(kind); err != nil {
			return err
		}
	}
	return nil
}

// ClearFaults disarms the faults of every rank.
func (s *Set) ClearFaults() {
	if s == nil {
		return
	}
	for _, p := range s.ranks {
		p.ClearFaults()
	}
}

// Close closes every rank's publisher.
func (s *Set) Close() error {
	if s == nil {
		return nil
	}
	for _, p := range s.ranks {
		_ = p.Close()
	}
	return nil
}
