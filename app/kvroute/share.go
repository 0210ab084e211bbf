package kvroute

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"os"
	"sync/atomic"
	"time"

	"github.com/cenkalti/backoff/v5"

	"github.com/smg-go/smg/domain/kvevent"
	"github.com/smg-go/smg/ports"
)

// shareQueue bounds the speculative entries waiting to be published; more are dropped
// (counted) rather than slowing the selection path.
const shareQueue = 256

// ShareStats counts what the Router shared with the other replicas.
type ShareStats struct {
	// Up: the last call to the shared store succeeded (false while it is unreachable:
	// speculative entries stay per replica).
	Up bool
	// Published and Received count entries sent and taken from other replicas; Dropped
	// those not published (queue full or store down); Failures the failed store calls.
	Published, Received, Dropped, Failures uint64
}

// sharer publishes this replica's speculative entries through a ports.KVShare and records
// the other replicas' ones. A store outage degrades to per-replica speculation (logged
// once) and recovers by itself: the listener resubscribes with backoff and catches up from
// the recent entries.
type sharer struct {
	store  ports.KVShare
	origin string
	r      *Router
	log    *slog.Logger
	q      chan kvevent.Shared

	up                                     atomic.Bool
	published, received, dropped, failures atomic.Uint64
}

func newSharer(store ports.KVShare, r *Router, log *slog.Logger) *sharer {
	s := &sharer{store: store, origin: instanceName(), r: r, log: log, q: make(chan kvevent.Shared, shareQueue)}
	s.up.Store(true)
	return s
}

// instanceName is the host name and a random suffix.
func instanceName() string {
	h, _ := os.Hostname()
	var b [4]byte
	_, _ = rand.Read(b[:])
	return h + "-" + hex.EncodeToString(b[:])
}

// offer queues e for publication without blocking.
func (s *sharer) offer(e kvevent.Shared) {
	e.Origin = s.origin
	select {
	case s.q <- e:
	default:
		s.dropped.Add(1)
	}
}

// run publishes and listens until ctx ends.
func (s *sharer) run(ctx context.Context) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.listen(ctx)
	}()
	for {
		select {
		case <-ctx.Done():
			<-done
			return
		case e := <-s.q:
			if time.Now().After(e.Expires) {
				s.dropped.Add(1)
				continue
			}
			if err := s.store.Publish(ctx, e); err != nil {
				s.dropped.Add(1)
				s.mark(err)
				continue
			}
			s.published.Add(1)
			s.mark(nil)
		}
	}
}

func (s *sharer) listen(ctx context.Context) {
	bo := &backoff.ExponentialBackOff{InitialInterval: 100 * time.Millisecond, RandomizationFactor: 0.2,
		Multiplier: 2, MaxInterval: 5 * time.Second}
	for ctx.Err() == nil {
		err := s.store.Listen(ctx, func() {
			bo.Reset()
			s.mark(nil)
			if rec, err := s.store.Recent(ctx); err == nil {
				for i := len(rec) - 1; i >= 0; i-- { // oldest first
					s.take(rec[i])
				}
			}
		}, s.take)
		if ctx.Err() != nil {
			return
		}
		s.mark(err)
		select {
		case <-ctx.Done():
		case <-time.After(bo.NextBackOff()):
		}
	}
}

// take records another replica's entry.
func (s *sharer) take(e kvevent.Shared) {
	if e.Origin == s.origin || !time.Now().Before(e.Expires) {
		return
	}
	if s.r.addShared(e) {
		s.received.Add(1)
	}
}

// mark logs the store's transitions between answering and not.
func (s *sharer) mark(err error) {
	if err == nil {
		if !s.up.Swap(true) {
			s.log.Info("kv share: the shared store answers again; speculative entries are shared across replicas")
		}
		return
	}
	s.failures.Add(1)
	if s.up.Swap(false) {
		s.log.Warn("kv share: the shared store is unavailable; speculative entries stay per replica until it answers", "err", err)
	}
}

func (s *sharer) stats() ShareStats {
	return ShareStats{Up: s.up.Load(), Published: s.published.Load(), Received: s.received.Load(),
		Dropped: s.dropped.Load(), Failures: s.failures.Load()}
}
