package sim

import (
	"context"
	"strconv"
	"time"
)

// The latency model (package compute): prefill time = PrefillFixed + uncached prompt
// tokens / PrefillTokensPerS, slowed while other prefills run; each output token costs
// ITL + ITLPerRunning × running; a decode pays KVTransferPerBlock per block received; at
// most MaxRunning requests compute at once (the rest wait for a slot).

// acquire takes a compute slot, waiting while the batch is full. false: ctx ended first.
func (s *Server) acquire(ctx context.Context) bool { return s.eng.Acquire(ctx) }

// release frees a slot taken by acquire.
func (s *Server) release() { s.eng.Release() }

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

// itl is the current inter-token latency.
func (s *Server) itl() time.Duration {
	return s.cfg.ITL + time.Duration(s.c.running.Load())*s.cfg.ITLPerRunning
}

func itoa(i int) string { return strconv.Itoa(i) }
