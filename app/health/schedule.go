package health

import (
	"container/heap"
	"context"
	"time"

	"github.com/smg-go/smg/domain/worker"
)

// probeConcurrency bounds the probes in flight at once. Probes normally take milliseconds, so
// the bound only matters when many workers hang at once: then the others wait for a free slot
// (each still probed, later). With the 60 s interval and 5 s timeout defaults, 256 slots keep
// every worker on schedule up to about 3,300 workers all hanging.
const probeConcurrency = 256

// target is one probed worker: its schedule and its state-machine history.
type target struct {
	w        *worker.Live
	probe    ProbeFunc
	interval time.Duration
	t        Thresholds
	counters Counters // read and written only by the probe that holds the target

	// Guarded by Checker.mu.
	next   time.Time          // when the next probe is due
	index  int                // position in Checker.due; -1 while probed or once finished
	cancel context.CancelFunc // the in-flight probe's; nil when none
	gone   bool               // removed: never rescheduled
}

// dueHeap orders targets by their next probe time (earliest first).
type dueHeap []*target

func (h dueHeap) Len() int           { return len(h) }
func (h dueHeap) Less(i, j int) bool { return h[i].next.Before(h[j].next) }
func (h dueHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}

func (h *dueHeap) Push(x any) {
	t := x.(*target)
	t.index = len(*h)
	*h = append(*h, t)
}

func (h *dueHeap) Pop() any {
	old := *h
	n := len(old) - 1
	t := old[n]
	old[n] = nil
	t.index = -1
	*h = old[:n]
	return t
}

// wakeLocked tells the scheduler the earliest due time may have changed. Callers hold c.mu.
func (c *Checker) wakeLocked() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// schedule is the one goroutine that starts probes: it takes a free slot, waits for the
// earliest due target and starts its probe on a goroutine of its own that gives the slot
// back when done. It returns when ctx (the Checker's) is done.
func (c *Checker) schedule(ctx context.Context) {
	defer c.wg.Done()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		select {
		case c.slots <- struct{}{}:
		case <-ctx.Done():
			return
		}
		if !c.launchNext(ctx, timer) {
			return
		}
	}
}

// launchNext waits for a target to be due and starts its probe with the slot the caller
// took. It returns false when ctx is done first.
func (c *Checker) launchNext(ctx context.Context, timer *time.Timer) bool {
	for {
		c.mu.Lock()
		var wait <-chan time.Time
		if len(c.due) > 0 {
			d := time.Until(c.due[0].next)
			if d <= 0 {
				tg := heap.Pop(&c.due).(*target)
				launched := c.launchLocked(ctx, tg)
				c.mu.Unlock()
				if launched {
					return true
				}
				continue
			}
			timer.Reset(d)
			wait = timer.C
		}
		c.mu.Unlock()
		select {
		case <-ctx.Done():
			return false
		case <-c.wake:
		case <-wait:
		}
	}
}

// launchLocked starts tg's probe and reports whether it did. A failed worker is no longer
// probed (it stays known, so it is not started again); a draining one is skipped until its
// next interval. Callers hold c.mu.
func (c *Checker) launchLocked(ctx context.Context, tg *target) bool {
	switch tg.w.Status() {
	case worker.StatusFailed:
		return false
	case worker.StatusDraining:
		tg.next = time.Now().Add(tg.interval)
		heap.Push(&c.due, tg)
		return false
	}
	pctx, cancel := context.WithCancel(ctx)
	tg.cancel = cancel
	c.wg.Add(1)
	go c.probeOnce(pctx, cancel, tg)
	return true
}

// probeOnce runs one probe of tg, applies its result and schedules the next one. A probe
// cancelled mid-way (the worker was removed, or Stop) means nothing: its result is dropped.
func (c *Checker) probeOnce(ctx context.Context, cancel context.CancelFunc, tg *target) {
	defer c.wg.Done()
	defer func() { <-c.slots }()
	defer cancel()
	err := tg.probe(ctx, tg.w)
	stale := ctx.Err() != nil
	if !stale {
		tg.counters = c.apply(tg.w, err, tg.counters, tg.t)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	tg.cancel = nil
	if stale || tg.gone || c.stopped {
		return
	}
	tg.next = time.Now().Add(tg.interval)
	heap.Push(&c.due, tg)
	c.wakeLocked()
}
