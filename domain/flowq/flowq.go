// Package flowq is the flow-control queue that sits in front of a decode worker's admission
// window when the window is full: requests wait here, ordered by priority (higher first),
// and, between the tenants of one priority, by deficit round robin (DRR) weighted by slots
// (one slot per backend request, the unit the admission window counts). Each tenant of a
// priority is a flow with its own FIFO; every flow visited in a round earns Quantum slots of
// credit and is served while its credit covers its head's cost, so over time each tenant
// with queued work gets an equal share of the slots this queue hands out, whatever its
// arrival rate. The queue is bounded: when it is full, an arrival evicts the newest request
// of the longest flow of the lowest priority below its own (or of its own priority, when
// that flow is longer than the arrival's), else the arrival itself is refused.
//
// The package is pure and not safe for concurrent use: the caller (app/admission) holds a
// lock around every call, applies deadlines, and claims the slots.
package flowq

import (
	"errors"
	"slices"
)

// Quantum is the credit, in slots, a flow earns each time the round robin visits it.
const Quantum = 1

// ErrFull is Push's answer when the queue is full and the arrival may evict nobody: every
// queued request has a higher priority, or an equal one in a flow no longer than the
// arrival's own.
var ErrFull = errors.New("flow queue full")

// Item is one queued request. Tenant, Priority and Cost are set by the caller before Push
// and not changed while queued; Value is the caller's.
type Item[T any] struct {
	// Tenant names the flow (tenant.Tenant.Name; "" for the anonymous tenant).
	Tenant string
	// Priority orders the queue: higher is served first.
	Priority int
	// Cost is the number of slots the request claims (at least 1; lower values count as 1).
	Cost int
	// Value is the caller's (a waiter).
	Value T

	flow *flow[T]
}

// Queue holds the queued items of one decode worker. The zero Queue is not usable: use New.
type Queue[T any] struct {
	capacity int
	n        int
	levels   []*level[T] // non-empty levels, priority descending
	depth    map[string]int
}

type level[T any] struct {
	priority int
	flows    map[string]*flow[T]
	ring     []*flow[T] // the flows with queued items, in round-robin order
	cur      int        // index in ring of the flow being served
}

type flow[T any] struct {
	tenant  string
	lvl     *level[T]
	items   []*Item[T] // FIFO
	deficit int        // slots of credit
	granted bool       // the current visit's quantum was granted
}

// New returns an empty queue that holds at most capacity items (at least 1).
func New[T any](capacity int) *Queue[T] {
	return &Queue[T]{capacity: max(capacity, 1), depth: map[string]int{}}
}

// Len returns the number of queued items.
func (q *Queue[T]) Len() int { return q.n }

// Cap returns the queue's capacity.
func (q *Queue[T]) Cap() int { return q.capacity }

// Depth returns the number of queued items of tenant.
func (q *Queue[T]) Depth(tenant string) int { return q.depth[tenant] }

// Push queues it. When the queue is full it evicts one item to make room and returns it
// (the caller sheds it), or refuses it with ErrFull (the caller sheds the arrival); see the
// package comment for which. it must not be queued already.
func (q *Queue[T]) Push(it *Item[T]) (evicted *Item[T], err error) {
	it.Cost = max(it.Cost, 1)
	if q.n >= q.capacity {
		victim := q.victim(it)
		if victim == nil {
			return nil, ErrFull
		}
		q.remove(victim)
		evicted = victim
	}
	q.insert(it)
	return evicted, nil
}

// victim returns the item an arrival may evict from a full queue, or nil.
func (q *Queue[T]) victim(arrival *Item[T]) *Item[T] {
	low := q.levels[len(q.levels)-1]
	if low.priority > arrival.Priority {
		return nil
	}
	var longest *flow[T]
	for _, f := range low.ring {
		if longest == nil || len(f.items) > len(longest.items) {
			longest = f
		}
	}
	if low.priority == arrival.Priority {
		own := 0
		if f := low.flows[arrival.Tenant]; f != nil {
			own = len(f.items)
		}
		if longest.tenant == arrival.Tenant || len(longest.items) <= own+1 {
			return nil
		}
	}
	return longest.items[len(longest.items)-1]
}

func (q *Queue[T]) insert(it *Item[T]) {
	i, found := slices.BinarySearchFunc(q.levels, it.Priority, func(l *level[T], p int) int { return p - l.priority })
	if !found {
		q.levels = slices.Insert(q.levels, i, &level[T]{priority: it.Priority, flows: map[string]*flow[T]{}})
	}
	l := q.levels[i]
	f := l.flows[it.Tenant]
	if f == nil {
		f = &flow[T]{tenant: it.Tenant, lvl: l}
		l.flows[it.Tenant] = f
		l.ring = append(l.ring, f)
	}
	f.items = append(f.items, it)
	it.flow = f
	q.n++
	q.depth[it.Tenant]++
}

// Next returns the item to serve next, or nil when the queue is empty: the highest
// priority's flows take turns by deficit round robin. Next does not remove the item, and
// returns the same item until Pop or Drop change the queue (or a higher priority arrives),
// so the caller may retry its claim; it only advances the round robin.
func (q *Queue[T]) Next() *Item[T] {
	if q.n == 0 {
		return nil
	}
	l := q.levels[0]
	for {
		f := l.ring[l.cur]
		if !f.granted {
			f.deficit += Quantum
			f.granted = true
		}
		if f.deficit >= f.items[0].Cost {
			return f.items[0]
		}
		f.granted = false
		l.cur = (l.cur + 1) % len(l.ring)
	}
}

// Pop removes it, served, and charges its cost to its flow's credit. it is normally the
// item Next returned; a queued item that was not is removed the same way, its flow's
// credit floored at 0. Pop of an item not queued is a no-op.
func (q *Queue[T]) Pop(it *Item[T]) {
	if it.flow == nil {
		return
	}
	f := it.flow
	f.deficit = max(f.deficit-it.Cost, 0)
	q.remove(it)
}

// Drop removes it without charging its flow (its deadline passed, or its client left).
// Dropping an item not queued is a no-op.
func (q *Queue[T]) Drop(it *Item[T]) {
	if it.flow != nil {
		q.remove(it)
	}
}

// Queued reports whether it is in the queue.
func (q *Queue[T]) Queued(it *Item[T]) bool { return it.flow != nil }

func (q *Queue[T]) remove(it *Item[T]) {
	f := it.flow
	it.flow = nil
	if i := slices.Index(f.items, it); i >= 0 {
		f.items = slices.Delete(f.items, i, i+1)
	}
	q.n--
	if q.depth[it.Tenant]--; q.depth[it.Tenant] <= 0 {
		delete(q.depth, it.Tenant)
	}
	if len(f.items) > 0 {
		return
	}
	// An idle flow leaves the round robin and loses its credit (DRR).
	l := f.lvl
	delete(l.flows, f.tenant)
	i := slices.Index(l.ring, f)
	l.ring = slices.Delete(l.ring, i, i+1)
	if i < l.cur {
		l.cur--
	}
	if l.cur >= len(l.ring) {
		l.cur = 0
	}
	if len(l.ring) == 0 {
		j := slices.Index(q.levels, l)
		q.levels = slices.Delete(q.levels, j, j+1)
	}
}
