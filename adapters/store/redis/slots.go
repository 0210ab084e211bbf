package redis

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	goredis "github.com/redis/go-redis/v9"

	"github.com/smg-go/smg/adapters/store/internal/wake"
	"github.com/smg-go/smg/ports"
)

// Slots is the Redis ports.SlotCounter: the decode admission windows shared by every
// instance on the same Redis and prefix. Claim, Renew, Release and InUse are one Lua
// script each, so one round trip and atomic. Release publishes on <prefix>slots:freed;
// every instance subscribes and wakes one local waiter of that worker per freed slot.
// Close stops the subscription; it does not close the client.
type Slots struct {
	c       goredis.UniversalClient
	o       Options
	channel string
	wq      *wake.Queues
	ps      *goredis.PubSub
	done    chan struct{}
	closeMu sync.Once
}

// NewSlots returns a Redis SlotCounter on client c and subscribes to the release channel.
// It waits up to OpTimeout for the subscription to be confirmed; when Redis is down it
// returns anyway (go-redis keeps resubscribing, and Wait's poll covers the gap). Call Close
// when done.
func NewSlots(ctx context.Context, c goredis.UniversalClient, o Options) *Slots {
	o = o.withDefaults()
	s := &Slots{c: c, o: o, channel: o.Prefix + "slots:freed", wq: wake.New(o.PollInterval),
		done: make(chan struct{})}
	s.ps = c.Subscribe(ctx, s.channel)
	sctx, cancel := context.WithTimeout(ctx, o.OpTimeout)
	if _, err := s.ps.Receive(sctx); err != nil {
		o.Logger.Warn("redis slots: release channel not subscribed yet; waiters poll until it is",
			"channel", s.channel, "err", err)
	}
	cancel()
	go s.listen(s.ps.Channel(goredis.WithChannelSize(1024)))
	return s
}

// listen turns release messages "<freed>|<worker URL>" into local wake-ups.
func (s *Slots) listen(ch <-chan *goredis.Message) {
	defer close(s.done)
	for m := range ch {
		n, w, ok := strings.Cut(m.Payload, "|")
		k, err := strconv.Atoi(n)
		if !ok || err != nil || k < 1 {
			continue
		}
		s.wq.Notify(w, k)
	}
}

// Close stops the release subscription and waits for its goroutine. Safe to call twice.
func (s *Slots) Close() error {
	var err error
	s.closeMu.Do(func() {
		err = s.ps.Close()
		<-s.done
	})
	return err
}

func (s *Slots) key(worker string) string { return s.o.Prefix + "slots:" + worker }

func (s *Slots) op(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, s.o.OpTimeout)
}

// Claim takes n slots on worker if they fit in window, in one round trip (see
// ports.SlotCounter). Errors: n < 1 or window < 1; Redis failures and timeouts (wrapped).
func (s *Slots) Claim(ctx context.Context, worker string, n, window int) (ports.Lease, bool, error) {
	if n < 1 || window < 1 {
		return ports.Lease{}, false, fmt.Errorf("redis slots: claim of %d slots in a window of %d: both must be >= 1", n, window)
	}
	ctx, cancel := s.op(ctx)
	defer cancel()
	id := uuid.NewString()
	res, err := claimScript.Run(ctx, s.c, []string{s.key(worker)},
		window, n, s.o.LeaseTTL.Milliseconds(), id).Int64Slice()
	if err != nil {
		return ports.Lease{}, false, fmt.Errorf("redis slots: claim on %s: %w", worker, err)
	}
	if len(res) != 2 {
		return ports.Lease{}, false, fmt.Errorf("redis slots: claim on %s: unexpected reply %v", worker, res)
	}
	if res[0] != 1 {
		return ports.Lease{}, false, nil
	}
	if int(res[1]) < window {
		s.wq.Notify(worker, 1) // room left: pass a wake-up on (or leave a permit)
	}
	return ports.Lease{Worker: worker, ID: id, N: n, TTL: s.o.LeaseTTL}, true, nil
}

// Renew restarts the lease's TTL in one round trip; ports.ErrLeaseLost when it expired or
// was released, a wrapped error when Redis failed.
func (s *Slots) Renew(ctx context.Context, l ports.Lease) error {
	if l.N < 1 || l.ID == "" {
		return ports.ErrLeaseLost
	}
	ctx, cancel := s.op(ctx)
	defer cancel()
	held, err := renewScript.Run(ctx, s.c, []string{s.key(l.Worker)},
		s.o.LeaseTTL.Milliseconds(), l.ID, l.N).Int64()
	if err != nil {
		return fmt.Errorf("redis slots: renew on %s: %w", l.Worker, err)
	}
	if held == 0 {
		return ports.ErrLeaseLost
	}
	return nil
}

// Release frees the lease's slots and notifies every instance, in one round trip.
// Releasing twice, or an expired lease, frees nothing and returns nil. Errors: Redis
// failures (wrapped); the lease then expires on its own within LeaseTTL.
func (s *Slots) Release(ctx context.Context, l ports.Lease) error {
	if l.N < 1 || l.ID == "" {
		return nil
	}
	ctx, cancel := s.op(ctx)
	defer cancel()
	err := releaseScript.Run(ctx, s.c, []string{s.key(l.Worker)},
		s.channel, l.Worker, l.ID, l.N).Err()
	if err != nil {
		return fmt.Errorf("redis slots: release on %s: %w", l.Worker, err)
	}
	return nil
}

// InUse returns the unexpired slots claimed on worker by every instance.
func (s *Slots) InUse(ctx context.Context, worker string) (int, error) {
	ctx, cancel := s.op(ctx)
	defer cancel()
	n, err := inUseScript.Run(ctx, s.c, []string{s.key(worker)}).Int64()
	if err != nil && !errors.Is(err, goredis.Nil) {
		return 0, fmt.Errorf("redis slots: in use on %s: %w", worker, err)
	}
	return int(n), nil
}

// Wait blocks until a release on worker (by any instance) wakes it, PollInterval passes,
// or ctx ends (see ports.SlotCounter). It makes no Redis call.
func (s *Slots) Wait(ctx context.Context, worker string) error {
	return s.wq.Wait(ctx, worker)
}

// PollInterval is the configured Wait bound.
func (s *Slots) PollInterval() time.Duration { return s.o.PollInterval }

var _ ports.SlotCounter = (*Slots)(nil)
