package sim

import (
	"context"
	"errors"
	"time"

	"github.com/smg-go/smg/test/sim/kvcache"
)

// The KV-cache model (package kvcache) as a request meets it. Every inference request,
// whatever the role, takes a lease per distinct prompt before it computes:
//
//   - an instance that computes the prompt (a prefill, a plain or recomputing decode)
//     reports its prefix hit as usage cached_tokens and computes the rest;
//   - a decode whose KV arrived through a handoff looks up its own cache first (as vLLM's
//     scheduler does before asking the connector for the remote tokens), spends
//     Config.KVTransferPerBlock per block it did not hold, and reports every prompt token
//     as cached (it computed none): usage cached_tokens = local hits + transferred tokens.
//
// Once the prompt's KV is present its full blocks are committed (cached, BlockStored), and
// the blocks stay held until the request ends.

// admitKV takes a lease for every distinct prompt of j (the first of its n samples carries
// it), sets the cached count of the items that compute their prompt, and spends the
// transfer time of the handoff items. release (never nil) frees every lease; call it when
// the request ends. A wait for blocks (the cache full of held blocks) counts as queue time.
func (s *Server) admitKV(ctx context.Context, j *job) (release func(), e *reqError) {
	release = func() {
		for i := range j.items {
			if l := j.items[i].lease; l != nil {
				l.Release()
			}
		}
	}
	transfer := 0
	for i := 0; i < len(j.items); i += j.n {
		it := &j.items[i]
		ids := make([]uint32, len(it.ids))
		for k, id := range it.ids {
			ids[k] = uint32(id)
		}
		l, err := s.kv.Acquire(ctx, ids, 0)
		if err != nil {
			if errors.Is(err, kvcache.ErrTooLarge) {
				return release, badRequest("%v", err)
			}
			return release, errClientGone
		}
		it.lease = l
		s.eng.AddQueue(l.Waited())
		if it.kvIn {
			transfer += l.Blocks() - l.CachedTokens()/s.kv.BlockSize()
			continue
		}
		for k := i; k < i+j.n; k++ {
			j.items[k].cached = l.CachedTokens()
		}
	}
	if !s.eng.Transfer(transfer, func(d time.Duration) bool { return s.sleep(ctx, d) }) {
		return release, errClientGone
	}
	return release, nil
}

// computePrompts spends the prefill time of j's uncached prompt tokens (the prompts that
// did not arrive through a handoff) and commits every prompt's blocks. false: the client
// went away first.
func (s *Server) computePrompts(ctx context.Context, j *job) bool {
	uncached := 0
	for i := 0; i < len(j.items); i += j.n {
		if it := &j.items[i]; !it.kvIn {
			uncached += len(it.ids) - it.cached
		}
	}
	if !s.eng.Prefill(uncached, func(d time.Duration) bool { return s.sleep(ctx, d) }) {
		return false
	}
	for i := range j.items {
		if l := j.items[i].lease; l != nil {
			l.Commit()
		}
	}
	return true
}
