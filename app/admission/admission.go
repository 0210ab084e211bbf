// Package admission applies the decode admission window (domain/admission) to PD
// dispatches: it claims the slots through ports.SlotCounter (shared between instances when
// Redis is configured), waits for a release within the budget, renews the lease while the
// decode leg runs and releases it when the leg ends.
package admission

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"go.uber.org/fx"

	"github.com/smg-go/smg/app/config"
	domain "github.com/smg-go/smg/domain/admission"
	"github.com/smg-go/smg/domain/tenant"
	"github.com/smg-go/smg/domain/worker"
	"github.com/smg-go/smg/ports"
)

// DefaultReleaseTimeout bounds the Release call made when a decode leg ends.
const DefaultReleaseTimeout = time.Second

// Options configure an Admitter. Zero values select the defaults.
type Options struct {
	// Budget is the longest a dispatch waits for a slot (--pd-admission-wait-secs); 0 sheds
	// at once when the window is full.
	Budget time.Duration
	// Metrics receives IncAdmissionWait / IncAdmissionShed; nil: not recorded.
	Metrics ports.PDMetrics
	// Logger receives renewal and store warnings (default slog.Default()).
	Logger *slog.Logger
	// Now is the clock (default time.Now).
	Now func() time.Time
	// ReleaseTimeout bounds the release at the end of the leg (default 1 s).
	ReleaseTimeout time.Duration
	// QueueSize bounds the flow-control queue of each decode worker on this replica
	// (--flow-queue-size); 0 disables the queue: every dispatch waits as Budget says.
	QueueSize int
	// QueueWait is the deadline of a tenant's queued dispatch (--flow-queue-wait-secs);
	// 0 sheds at once when the window is full.
	QueueWait time.Duration
	// QueueMetrics receives the per-tenant queue series; nil: not recorded.
	QueueMetrics ports.FlowQueueMetrics
}

// Admitter gates PD dispatches on their decode worker's admission window. Safe for
// concurrent use; one per gateway.
type Admitter struct {
	slots  ports.SlotCounter
	o      Options
	queues *queues // nil without a queue
	// instant: slots answers in memory (instantSlots), so a release needs no deadline.
	instant bool
}

// instantSlots is implemented by a slot store whose Release answers at once from memory,
// without a round trip and without reading its context (adapters/store/memory): the
// release then skips its ReleaseTimeout context and timer, once per PD request.
type instantSlots interface {
	InstantRelease() bool
}

// New returns an Admitter counting slots in slots.
func New(slots ports.SlotCounter, o Options) *Admitter {
	if o.Budget < 0 {
		o.Budget = 0
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.ReleaseTimeout <= 0 {
		o.ReleaseTimeout = DefaultReleaseTimeout
	}
	a := &Admitter{slots: slots, o: o}
	if is, ok := slots.(instantSlots); ok {
		a.instant = is.InstantRelease()
	}
	if o.QueueSize > 0 {
		a.queues = &queues{m: map[string]*workerQueue{}}
	}
	return a
}

// Module provides *Admitter from config.Config (PDAdmissionWait, FlowQueueSize,
// FlowQueueWait), ports.SlotCounter and, when present, ports.PDMetrics,
// ports.FlowQueueMetrics and *slog.Logger.
func Module() fx.Option {
	return fx.Module("admission", fx.Provide(func(in struct {
		fx.In
		Config  config.Config
		Slots   ports.SlotCounter
		Metrics ports.PDMetrics        `optional:"true"`
		Queue   ports.FlowQueueMetrics `optional:"true"`
		Log     *slog.Logger           `optional:"true"`
	}) *Admitter {
		return New(in.Slots, Options{Budget: in.Config.PDAdmissionWait, Metrics: in.Metrics, Logger: in.Log,
			QueueSize: in.Config.FlowQueueSize, QueueWait: in.Config.FlowQueueWait, QueueMetrics: in.Queue})
	}))
}

func noop() {}

// Admit claims n slots (one per backend request; n < 1 counts as 1) on the decode worker
// before a dispatch. Workers without a window (domain/admission.WindowOf) are not gated.
// A full window waits, woken by releases (SlotCounter.Wait, not polling), up to the
// budget, then sheds. With a queue (QueueSize > 0), a dispatch whose context carries a
// tenant (domain/tenant), or any dispatch while the worker's queue is not empty, waits in
// the flow-control queue instead (queue.go): by priority, then deficit round robin between
// tenants, up to QueueWait (Budget for a dispatch without a tenant), and may be evicted by a
// higher priority; both shed with the same 503. Without a tenant and with the queue empty,
// the wait is exactly the seed's --pd-admission-wait-secs.
//
// It returns a release func to call exactly when the decode leg ends, whatever the
// outcome (success, error, client disconnect); it is idempotent and never blocks for long
// (renewer stop plus one Release bounded by ReleaseTimeout, on a context detached from
// ctx's cancellation). While held, the lease is renewed every TTL/3.
//
// Errors: the shed, a *errs.Error 503 worker_overload_protection_shed with RetryAfterSecs
// (counted by IncAdmissionShed); n larger than the whole window, 400
// admission_window_exceeded at once (domain TooLargeError; not a shed, not counted); ctx.Err() when ctx ends while waiting (not a shed). A
// failing SlotCounter does not fail the dispatch: it is admitted ungated and logged (the
// store's Fallback wrapper normally absorbs Redis outages first). A dispatch admitted
// after at least one wait is counted by IncAdmissionWait.
func (a *Admitter) Admit(ctx context.Context, decode *worker.Live, n int) (release func(), err error) {
	window, gated := domain.WindowOf(decode.Worker)
	if !gated {
		return noop, nil
	}
	n = max(n, 1)
	t, hasTenant := tenant.FromContext(ctx)
	if hasTenant {
		ports.RequestInfoFrom(ctx).SetTenant(t.Name) // the access line names it
	}
	if a.queues != nil && n <= window {
		// A tenant's dispatch goes through the flow-control queue; so does any dispatch
		// while the worker's queue holds requests, so that none jumps it.
		if hasTenant {
			return a.admitQueued(ctx, decode, n, window, t, a.o.QueueWait)
		}
		if a.o.Budget > 0 && a.queues.busy(decode.URL) {
			return a.admitQueued(ctx, decode, n, window, tenant.Tenant{}, a.o.Budget)
		}
	}
	url := decode.URL
	start := a.o.Now()
	waited := false
	for {
		claimed := false
		var lease ports.Lease
		if n <= window {
			var err error
			lease, claimed, err = a.slots.Claim(ctx, url, n, window)
			if err != nil {
				if ctx.Err() != nil {
					return nil, ctx.Err()
				}
				a.o.Logger.Warn("admission: slot store failed; dispatch admitted without the window",
					"worker", url, "err", err)
				return noop, nil
			}
		}
		elapsed := a.o.Now().Sub(start)
		switch domain.Decide(claimed, n, window, elapsed, a.o.Budget) {
		case domain.Admit:
			if waited && a.o.Metrics != nil {
				a.o.Metrics.IncAdmissionWait()
			}
			return a.hold(ctx, lease), nil
		case domain.Refuse:
			return nil, domain.TooLargeError(url, n, window)
		case domain.Shed:
			if a.o.Metrics != nil {
				a.o.Metrics.IncAdmissionShed()
			}
			return nil, domain.ShedError(url, window, elapsed, a.o.Budget)
		}
		waited = true
		wctx, cancel := context.WithTimeout(ctx, domain.Remaining(elapsed, a.o.Budget))
		_ = a.slots.Wait(wctx, url) // nil (maybe freed) or the budget ran out: claim again
		cancel()
		if err := ctx.Err(); err != nil {
			return nil, err
		}
	}
}

// hold renews lease every TTL/3 until the returned release func runs, which stops the
// renewals and releases the lease. Renewals run on a timer (time.AfterFunc), not on a
// goroutine per held lease, so an open stream costs no goroutine here. One holding is one
// allocation plus its timer: this runs once per PD request.
func (a *Admitter) hold(ctx context.Context, lease ports.Lease) func() {
	h := &holding{a: a, ctx: ctx, lease: lease, every: max(lease.TTL/3, time.Millisecond)}
	h.mu.Lock()
	h.t = time.AfterFunc(h.every, h.renew)
	h.mu.Unlock()
	return h.release
}

// holding is one held lease: its renewal timer and its release.
type holding struct {
	a     *Admitter
	ctx   context.Context // the dispatch's; renewals and the release detach from its cancellation
	lease ports.Lease
	every time.Duration

	mu      sync.Mutex // held during a renewal, so release never races one
	stopped bool
	t       *time.Timer
	once    sync.Once
}

func (h *holding) renew() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.stopped {
		return
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(h.ctx), min(h.every, h.a.o.ReleaseTimeout))
	err := h.a.slots.Renew(rctx, h.lease)
	cancel()
	if errors.Is(err, ports.ErrLeaseLost) {
		h.a.o.Logger.Warn("admission: slot lease lost while the decode leg runs (not renewed in time)",
			"worker", h.lease.Worker, "slots", h.lease.N, "lease_ttl", h.lease.TTL)
		return
	}
	if err != nil {
		h.a.o.Logger.Debug("admission: slot lease renewal failed", "worker", h.lease.Worker, "err", err)
	}
	h.t.Reset(h.every)
}

// release stops the renewals and releases the lease, once.
func (h *holding) release() { h.once.Do(h.releaseOnce) }

func (h *holding) releaseOnce() {
	h.mu.Lock()
	h.stopped = true
	h.t.Stop()
	h.mu.Unlock()
	rctx := context.WithoutCancel(h.ctx)
	if !h.a.instant {
		var cancel context.CancelFunc
		rctx, cancel = context.WithTimeout(rctx, h.a.o.ReleaseTimeout)
		defer cancel()
	}
	if err := h.a.slots.Release(rctx, h.lease); err != nil {
		h.a.o.Logger.Warn("admission: slot release failed; the lease expires on its own",
			"worker", h.lease.Worker, "lease_ttl", h.lease.TTL, "err", err)
	}
}
