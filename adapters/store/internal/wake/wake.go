// Package wake holds the per-worker waiter queues behind ports.SlotCounter.Wait, shared by
// the memory and Redis adapters: a notification wakes the oldest waiter of a worker, a
// notification nobody waited for is kept as one permit for the next Wait, and every Wait
// is bounded by a poll interval.
package wake

import (
	"context"
	"sync"
	"time"
)

// Queues is a set of FIFO waiter queues keyed by worker. The zero value is not usable; use
// New. Safe for concurrent use.
type Queues struct {
	poll time.Duration
	mu   sync.Mutex
	m    map[string]*queue
}

type queue struct {
	waiters []chan struct{}
	permit  bool
}

// New returns empty queues whose Wait returns after at most poll (poll <= 0: 250 ms).
func New(poll time.Duration) *Queues {
	if poll <= 0 {
		poll = 250 * time.Millisecond
	}
	return &Queues{poll: poll, m: make(map[string]*queue)}
}

// Notify wakes up to k waiters of worker, oldest first. When nobody waits, it leaves one
// permit so that the next Wait returns at once (a release between a failed claim and the
// Wait is not lost).
func (q *Queues) Notify(worker string, k int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	w := q.m[worker]
	if w == nil {
		w = &queue{}
		q.m[worker] = w
	}
	for ; k > 0 && len(w.waiters) > 0; k-- {
		ch := w.waiters[0]
		w.waiters[0] = nil
		w.waiters = w.waiters[1:]
		ch <- struct{}{} // buffered (1), each channel is signalled once
	}
	if k > 0 {
		w.permit = true
	}
	if len(w.waiters) == 0 && !w.permit {
		delete(q.m, worker)
	}
}

// Len returns the number of waiters queued on worker.
func (q *Queues) Len(worker string) int {
	q.mu.Lock()
	defer q.mu.Unlock()
	if w := q.m[worker]; w != nil {
		return len(w.waiters)
	}
	return 0
}

// Wait returns nil when notified, when a permit was pending, or after the poll interval;
// it returns ctx.Err() when ctx ends first. A notification delivered to a waiter that is
// leaving because ctx ended is handed on to the next waiter.
func (q *Queues) Wait(ctx context.Context, worker string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	q.mu.Lock()
	w := q.m[worker]
	if w == nil {
		w = &queue{}
		q.m[worker] = w
	}
	if w.permit {
		w.permit = false
		if len(w.waiters) == 0 {
			delete(q.m, worker)
		}
		q.mu.Unlock()
		return nil
	}
	ch := make(chan struct{}, 1)
	w.waiters = append(w.waiters, ch)
	q.mu.Unlock()

	t := time.NewTimer(q.poll)
	defer t.Stop()
	select {
	case <-ch:
		return nil
	case <-t.C:
		q.leave(worker, ch, false)
		return nil
	case <-ctx.Done():
		q.leave(worker, ch, true)
		return ctx.Err()
	}
}

// leave removes ch from worker's queue. If ch was signalled meanwhile and pass is set, the
// signal goes to the next waiter (or becomes the permit).
func (q *Queues) leave(worker string, ch chan struct{}, pass bool) {
	q.mu.Lock()
	w := q.m[worker]
	if w != nil {
		for i, c := range w.waiters {
			if c == ch {
				w.waiters = append(w.waiters[:i], w.waiters[i+1:]...)
				if len(w.waiters) == 0 && !w.permit {
					delete(q.m, worker)
				}
				q.mu.Unlock()
				return
			}
		}
	}
	q.mu.Unlock()
	// Not queued any more: Notify signalled ch.
	select {
	case <-ch:
		if pass {
			q.Notify(worker, 1)
		}
	default:
	}
}
