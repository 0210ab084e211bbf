package grpcsim

import (
	"context"
	"errors"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/smg-go/smg/test/sim/kvcache"
)

// work is one Generate RPC's hold on the instance: its KV-cache lease and compute slot.
type work struct {
	admitted bool
	lease    *kvcache.Lease
	slot     bool
	// cached is the usage cached_tokens: the prefix hit of an instance that computes the
	// prompt, every prompt token when the KV arrived through a handoff.
	cached int
}

// admit runs the prompt through the KV-cache and compute models (the HTTP simulator's
// test/sim kv.go, same rules): a lease on the prompt's blocks (its prefix hit), then, when
// the KV arrived through a handoff (received), the transfer time of the blocks the
// instance did not hold; a compute slot (queueing while MaxRunning RPCs hold one); the
// prefill time of the uncached tokens (none when received); and the commit of the
// prompt's full blocks. A prefill calls it before it registers its KV for the decode, so
// the decode never receives KV that is not computed yet. Errors are gRPC statuses.
func (s *Server) admit(ctx context.Context, req genRequest, received bool, w *work) error {
	w.admitted = true
	l, err := s.cache.Acquire(ctx, req.ids, 0)
	if err != nil {
		if errors.Is(err, kvcache.ErrTooLarge) {
			return status.Error(codes.InvalidArgument, err.Error())
		}
		return s.cancelled(ctx)
	}
	w.lease = l
	s.eng.AddQueue(l.Waited())
	var serr error
	sleep := func(d time.Duration) bool {
		serr = s.sleep(ctx, d)
		return serr == nil
	}
	w.cached = l.CachedTokens()
	uncached := len(req.ids) - w.cached
	if received {
		if !s.eng.Transfer(l.Blocks()-w.cached/s.cfg.PageSize, sleep) {
			return serr
		}
		w.cached, uncached = len(req.ids), 0
	}
	if !s.eng.Acquire(ctx) {
		return s.cancelled(ctx)
	}
	w.slot = true
	if !s.eng.Prefill(uncached, sleep) {
		return serr
	}
	l.Commit()
	return nil
}

// finish releases what admit took.
func (s *Server) finish(w *work) {
	if w.slot {
		s.eng.Release()
	}
	if w.lease != nil {
		w.lease.Release()
	}
}

// itl is the current inter-token latency: ITL + ITLPerRunning × running RPCs.
func (s *Server) itl() time.Duration {
	return s.cfg.ITL + time.Duration(s.c.running.Load())*s.cfg.ITLPerRunning
}
