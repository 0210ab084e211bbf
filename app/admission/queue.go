package admission

import (
	"context"
	"errors"
	"sync"
	"time"

	domain "github.com/smg-go/smg/domain/admission"
	"github.com/smg-go/smg/domain/flowq"
	"github.com/smg-go/smg/domain/tenant"
	"github.com/smg-go/smg/domain/worker"
	"github.com/smg-go/smg/ports"
)

// Queue outcomes and shed reasons (ports.FlowQueueMetrics label values).
const (
	outcomeAdmitted  = "admitted"
	outcomeShed      = "shed"
	outcomeCancelled = "cancelled"

	ReasonDeadline  = "deadline"
	ReasonEvicted   = "evicted"
	ReasonQueueFull = "queue_full"
)

// queues holds one flow-control queue per decode worker URL, on this replica.
type queues struct {
	mu sync.Mutex
	m  map[string]*workerQueue
}

// workerQueue is one decode worker's queue and the state of its pump: the one goroutine
// that, while the queue is not empty, claims slots for the queue's next item and waits for
// releases (ports.SlotCounter.Wait) in between.
type workerQueue struct {
	url string

	mu      sync.Mutex
	q       *flowq.Queue[*waiter]
	pumping bool
	kick    context.CancelFunc // ends the pump's current Wait; nil when not waiting
	kicked  bool               // a kick came while the pump was not waiting
	dead    bool               // removed from queues.m (empty, no pump): push to a fresh one
}

// waiter is one queued dispatch. done receives exactly one result, sent under the queue's
// lock when the item leaves the queue through the pump (admitted) or an eviction.
type waiter struct {
	live   *worker.Live
	n      int
	window int
	done   chan queued
	item   *flowq.Item[*waiter]
}

// queued is how a waiter left the queue: with a claimed lease (lease.held), admitted
// without the window because the slot store failed (lease not held, err nil), or evicted
// (err).
type queued struct {
	lease leaseOrNone
	err   error
}

// leaseOrNone is a claimed lease (held) or an admission without the window (not held).
type leaseOrNone struct {
	lease ports.Lease
	held  bool
}

// errEvicted is the result of a waiter evicted from a full queue.
var errEvicted = errors.New("evicted from the flow queue")

// claim claims n slots once. A failing store admits without the window (ok, lease not
// held), as Admit does; err is only ctx's.
func (a *Admitter) claim(ctx context.Context, url string, n, window int) (leaseOrNone, bool, error) {
	lease, ok, err := a.slots.Claim(ctx, url, n, window)
	if err != nil {
		if ctx.Err() != nil {
			return leaseOrNone{}, false, ctx.Err()
		}
		a.o.Logger.Warn("admission: slot store failed; dispatch admitted without the window", "worker", url, "err", err)
		return leaseOrNone{}, true, nil
	}
	return leaseOrNone{lease: lease, held: ok}, ok, nil
}

// holdOrNot holds l (renewals until release) when it was claimed; else release is a no-op.
func (a *Admitter) holdOrNot(ctx context.Context, l leaseOrNone) func() {
	if !l.held {
		return noop
	}
	return a.hold(ctx, l.lease)
}

// releaseNow releases l at once (a lease claimed for a waiter that left).
func (a *Admitter) releaseNow(ctx context.Context, l leaseOrNone) {
	if !l.held {
		return
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), a.o.ReleaseTimeout)
	defer cancel()
	if err := a.slots.Release(rctx, l.lease); err != nil {
		a.o.Logger.Warn("admission: slot release failed; the lease expires on its own", "worker", l.lease.Worker, "err", err)
	}
}

func (qs *queues) get(url string, size int) *workerQueue {
	qs.mu.Lock()
	defer qs.mu.Unlock()
	wq := qs.m[url]
	if wq == nil {
		wq = &workerQueue{url: url, q: flowq.New[*waiter](size)}
		qs.m[url] = wq
	}
	return wq
}

// forget takes wq out of the map when it is still empty and without a pump, so that the map
// holds only the queues of workers with waiting requests (decode workers come and go; their
// URLs must not pile up). A request that got wq before this sees dead and gets a new one.
func (qs *queues) forget(wq *workerQueue) {
	qs.mu.Lock()
	defer qs.mu.Unlock()
	wq.mu.Lock()
	defer wq.mu.Unlock()
	if wq.pumping || wq.q.Len() > 0 || qs.m[wq.url] != wq {
		return
	}
	wq.dead = true
	delete(qs.m, wq.url)
}

// size is the number of per-worker queues held (tests: emptied queues are dropped).
func (qs *queues) size() int {
	qs.mu.Lock()
	defer qs.mu.Unlock()
	return len(qs.m)
}

// busy reports whether url's queue holds requests on this replica.
func (qs *queues) busy(url string) bool {
	qs.mu.Lock()
	wq := qs.m[url]
	qs.mu.Unlock()
	if wq == nil {
		return false
	}
	wq.mu.Lock()
	defer wq.mu.Unlock()
	return wq.q.Len() > 0
}

// wake ends the pump's current Wait, or makes its next one return at once. Called with
// wq.mu held.
func (wq *workerQueue) wake() {
	if wq.kick != nil {
		wq.kick()
		wq.kick = nil
		return
	}
	wq.kicked = true
}

// admitQueued is Admit for a request that goes through the flow-control queue: a request
// of a tenant (tenant.FromContext), or any request while its decode worker's queue is
// not empty. With the queue empty it claims at once; else, or when that claim fails, it
// queues and waits until the pump hands it a lease, its deadline (wait after its arrival)
// passes, it is evicted, or ctx ends.
func (a *Admitter) admitQueued(ctx context.Context, decode *worker.Live, n, window int, t tenant.Tenant, wait time.Duration) (func(), error) {
	start := a.o.Now()
	if !a.queues.busy(decode.URL) { // no queue, or an empty one: claim without queueing
		lease, ok, err := a.claim(ctx, decode.URL, n, window)
		if err != nil {
			return nil, err
		}
		if ok {
			return a.holdOrNot(ctx, lease), nil
		}
	}

	w := &waiter{live: decode, n: n, window: window, done: make(chan queued, 1)}
	w.item = &flowq.Item[*waiter]{Tenant: t.Name, Priority: t.Priority, Cost: n, Value: w}
	wq := a.queues.get(decode.URL, a.o.QueueSize)
	wq.mu.Lock()
	for wq.dead { // its pump emptied it and took it out of the map since get
		wq.mu.Unlock()
		wq = a.queues.get(decode.URL, a.o.QueueSize)
		wq.mu.Lock()
	}
	evicted, err := wq.q.Push(w.item)
	if err != nil {
		wq.mu.Unlock()
		return nil, a.queueShed(t.Name, ReasonQueueFull, decode.URL, window, 0, wait)
	}
	a.enqueued(t.Name, decode, 1)
	if evicted != nil {
		a.enqueued(evicted.Tenant, evicted.Value.live, -1)
		evicted.Value.done <- queued{err: errEvicted}
	}
	if !wq.pumping {
		wq.pumping = true
		go a.pump(wq)
	} else if wq.q.Next() == w.item {
		wq.wake() // a new head: it may fit where the old one did not
	}
	wq.mu.Unlock()

	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	var r queued
	got, reason := false, ""
	select {
	case r = <-w.done:
		got = true
	case <-deadline.C:
		reason = ReasonDeadline
	case <-ctx.Done():
	}
	if !got {
		// The deadline or ctx ended the wait: leave the queue, unless the pump or an
		// eviction took the item first, in which case its result is already in done.
		wq.mu.Lock()
		if wq.q.Queued(w.item) {
			wq.q.Drop(w.item)
			a.enqueued(t.Name, decode, -1)
			wq.wake() // the head may have changed
			wq.mu.Unlock()
		} else {
			wq.mu.Unlock()
			got := <-w.done
			if got.err == nil {
				a.releaseNow(ctx, got.lease)
			}
		}
		waited := a.o.Now().Sub(start)
		if reason == "" {
			a.observeQueue(t.Name, outcomeCancelled, waited)
			return nil, ctx.Err()
		}
		return nil, a.queueShed(t.Name, reason, decode.URL, window, waited, wait)
	}
	waited := a.o.Now().Sub(start)
	if r.err != nil {
		return nil, a.queueShed(t.Name, ReasonEvicted, decode.URL, window, waited, wait)
	}
	a.observeQueue(t.Name, outcomeAdmitted, waited)
	if a.o.Metrics != nil {
		a.o.Metrics.IncAdmissionWait()
	}
	if ctx.Err() != nil {
		a.releaseNow(ctx, r.lease)
		return nil, ctx.Err()
	}
	return a.holdOrNot(ctx, r.lease), nil
}

// pump serves wq until it is empty: it claims the slots of the queue's next item and hands
// the lease over, or waits for a release (or a kick: a new head, a departure) and claims
// again. A failing slot store admits the head without the window, as Admit does.
func (a *Admitter) pump(wq *workerQueue) {
	for {
		wq.mu.Lock()
		it := wq.q.Next()
		if it == nil {
			wq.pumping, wq.kick, wq.kicked = false, nil, false
			wq.mu.Unlock()
			a.queues.forget(wq)
			return
		}
		w := it.Value
		wq.kicked = false
		wq.mu.Unlock()

		cctx, ccancel := context.WithTimeout(context.Background(), a.o.ReleaseTimeout)
		lease, ok, err := a.slots.Claim(cctx, wq.url, w.n, w.window)
		ccancel()
		if err != nil {
			a.o.Logger.Warn("admission: slot store failed; queued dispatch admitted without the window",
				"worker", wq.url, "err", err)
		}
		if ok || err != nil {
			got := leaseOrNone{}
			if ok {
				got = leaseOrNone{lease: lease, held: true}
			}
			wq.mu.Lock()
			if wq.q.Queued(it) {
				wq.q.Pop(it)
				a.enqueued(it.Tenant, w.live, -1)
				w.done <- queued{lease: got}
				wq.mu.Unlock()
			} else {
				wq.mu.Unlock()
				a.releaseNow(context.Background(), got) // it left while we claimed
			}
			continue
		}

		wq.mu.Lock()
		if wq.kicked {
			wq.kicked = false
			wq.mu.Unlock()
			continue
		}
		wctx, cancel := context.WithCancel(context.Background())
		wq.kick = cancel
		wq.mu.Unlock()
		_ = a.slots.Wait(wctx, wq.url) // a release, the poll interval, or a kick
		cancel()
		wq.mu.Lock()
		wq.kick = nil
		wq.mu.Unlock()
	}
}

// enqueued moves the queue series and the worker's Queued count by delta.
func (a *Admitter) enqueued(tenantName string, live *worker.Live, delta int) {
	live.AddQueued(int64(delta))
	if a.o.QueueMetrics != nil {
		a.o.QueueMetrics.AddQueued(tenantName, delta)
	}
}

func (a *Admitter) observeQueue(tenantName, outcome string, d time.Duration) {
	if a.o.QueueMetrics != nil {
		a.o.QueueMetrics.ObserveQueueTime(tenantName, outcome, d)
	}
}

// queueShed counts and returns the shed of a queued (or refused) request: the seed's 503
// worker_overload_protection_shed with Retry-After (domain ShedQueuedError).
func (a *Admitter) queueShed(tenantName, reason, url string, window int, waited, wait time.Duration) error {
	if reason != ReasonQueueFull {
		a.observeQueue(tenantName, outcomeShed, waited)
	}
	if a.o.QueueMetrics != nil {
		a.o.QueueMetrics.IncQueueShed(tenantName, reason)
	}
	if a.o.Metrics != nil {
		a.o.Metrics.IncAdmissionShed()
	}
	return domain.ShedQueuedError(url, window, reason, waited, wait)
}
