// Package tokenshare shares the gateway's in-flight token load (worker.Live.LocalTokenLoad)
// with the other gateway instances through a ports.TokenBoard (Redis with --redis-url), and
// records theirs on each worker (worker.Live.SetRemoteTokens), so a token-aware policy
// (--load-metric tokens) on one instance sees what the others dispatched. The shared part
// lags by at most one Interval plus a store round trip; this instance's own part is always
// current.
package tokenshare

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"os"
	"time"

	"github.com/smg-go/smg/domain/worker"
	"github.com/smg-go/smg/ports"
)

// Defaults of Options.
const (
	// DefaultInterval is how often an instance publishes and reads the board.
	DefaultInterval = 250 * time.Millisecond
	// DefaultTTL is how long a published table lives: several intervals, so one late
	// publication does not drop an instance's load, and a crashed instance's goes soon.
	DefaultTTL = 2 * time.Second
)

// Options configure a Syncer. Zero values select the defaults.
type Options struct {
	// Interval between two syncs (default DefaultInterval); TTL of a published table
	// (default DefaultTTL).
	Interval, TTL time.Duration
	// Instance names this gateway on the board (default: host name and a random suffix).
	Instance string
	// Logger receives store failures (default slog.Default()), at most one per failure streak.
	Logger *slog.Logger
}

// Workers lists the registered workers (ports.WorkerStore's List).
type Workers interface {
	List() []*worker.Live
}

// Syncer publishes this instance's token load per worker URL and records the others'.
type Syncer struct {
	board   ports.TokenBoard
	workers Workers
	o       Options
	failing bool
}

// New returns a Syncer over board for the workers ws lists.
func New(board ports.TokenBoard, ws Workers, o Options) *Syncer {
	if o.Interval <= 0 {
		o.Interval = DefaultInterval
	}
	if o.TTL <= 0 {
		o.TTL = DefaultTTL
	}
	if o.Instance == "" {
		o.Instance = instanceName()
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return &Syncer{board: board, workers: ws, o: o}
}

// Sync runs one round: publish this instance's table, then set every worker's remote tokens
// from the others' tables. When the board fails, remote tokens are reset to 0 (a stale
// share must not keep a worker looking busy) and the error is returned.
func (s *Syncer) Sync(ctx context.Context) error {
	ws := s.workers.List()
	loads := make(map[string]int64, len(ws))
	for _, w := range ws {
		if n := w.LocalTokenLoad(); n > 0 {
			loads[w.URL] += n
		}
	}
	err := s.board.Publish(ctx, s.o.Instance, loads, s.o.TTL)
	var others map[string]int64
	if err == nil {
		others, err = s.board.Others(ctx, s.o.Instance)
	}
	for _, w := range ws {
		w.SetRemoteTokens(others[w.URL]) // nil map on error: 0
	}
	return err
}

// Run syncs every Interval until ctx ends, logging the first failure of a streak and the
// recovery.
func (s *Syncer) Run(ctx context.Context) {
	t := time.NewTicker(s.o.Interval)
	defer t.Stop()
	for {
		err := s.Sync(ctx)
		switch {
		case err != nil && !s.failing && ctx.Err() == nil:
			s.o.Logger.Warn("token load sharing failed; token-aware policies see this instance's load only", "err", err)
			s.failing = true
		case err == nil && s.failing:
			s.o.Logger.Info("token load sharing recovered")
			s.failing = false
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func instanceName() string {
	h, _ := os.Hostname()
	var b [4]byte
	_, _ = rand.Read(b[:])
	return h + "-" + hex.EncodeToString(b[:])
}
