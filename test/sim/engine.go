package sim

import (
	"context"
	"strconv"
	"time"
)

// The latency model (issue #2): prefill time grows with uncached prompt tokens
// (PrefillTokensPerS), each output token costs ITL + ITLPerRunning × running, and at most
// MaxRunning requests compute at once (the rest wait for a slot).

// acquire takes a compute slot, waiting while the batch is full. false: ctx ended first.
func (s *Server) acquire(ctx context.Context) bool {
	if s.slots == nil {
		return true
	}
	select {
	case s.slots <- struct{}{}:
		return true
	default:
	}
	s.c.waiting.Add(1)
	defer s.c.waiting.Add(-1)
	select {
	case s.slots <- struct{}{}:
		return true
	case <-ctx.Done():
		return false
	}
}

// release frees a slot taken by acquire.
func (s *Server) release() {
	if s.slots != nil {
		<-s.slots
	}
}

// sleep waits d unless ctx ends first (false). A zero or negative d returns at once.
func (s *Server) sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// prefillTime is the time to compute tokens uncached prompt tokens.
func (s *Server) prefillTime(tokens int) time.Duration {
	if s.cfg.PrefillTokensPerS <= 0 || tokens <= 0 {
		return 0
	}
	return time.Duration(float64(tokens) / s.cfg.PrefillTokensPerS * float64(time.Second))
}

// itl is the current inter-token latency.
func (s *Server) itl() time.Duration {
	return s.cfg.ITL + time.Duration(s.c.running.Load())*s.cfg.ITLPerRunning
}

func itoa(i int) string { return strconv.Itoa(i) }
