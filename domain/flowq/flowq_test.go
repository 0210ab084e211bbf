package flowq_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/domain/flowq"
)

func item(tenant string, prio, cost int, v string) *flowq.Item[string] {
	return &flowq.Item[string]{Tenant: tenant, Priority: prio, Cost: cost, Value: v}
}

// serve pops n items in Next order and returns their values.
func serve(q *flowq.Queue[string], n int) []string {
	var out []string
	for i := 0; i < n; i++ {
		it := q.Next()
		if it == nil {
			break
		}
		out = append(out, it.Value)
		q.Pop(it)
	}
	return out
}

func push(t *testing.T, q *flowq.Queue[string], its ...*flowq.Item[string]) {
	t.Helper()
	for _, it := range its {
		ev, err := q.Push(it)
		require.NoError(t, err)
		require.Nil(t, ev)
	}
}

func TestHigherPriorityIsServedFirst(t *testing.T) {
	t.Parallel()
	q := flowq.New[string](10)
	push(t, q, item("batch", 0, 1, "b1"), item("batch", 0, 1, "b2"), item("chat", 5, 1, "c1"), item("mid", 2, 1, "m1"))
	assert.Equal(t, []string{"c1", "m1", "b1", "b2"}, serve(q, 10))
	assert.Nil(t, q.Next())
	assert.Zero(t, q.Len())
}

func TestNextIsStableUntilPopOrDrop(t *testing.T) {
	t.Parallel()
	q := flowq.New[string](10)
	push(t, q, item("a", 0, 1, "a1"), item("b", 0, 1, "b1"))
	first := q.Next()
	for i := 0; i < 5; i++ {
		assert.Same(t, first, q.Next(), "a claim retried against the same head")
	}
	q.Drop(first)
	assert.Equal(t, "b1", q.Next().Value)
}

// Deficit round robin between the tenants of one priority: a tenant with 6 queued requests
// does not hold back one that arrived later with 2; they alternate.
func TestTenantsOfOnePriorityAlternate(t *testing.T) {
	t.Parallel()
	q := flowq.New[string](20)
	for i := 1; i <= 6; i++ {
		push(t, q, item("batch", 0, 1, fmt.Sprintf("b%d", i)))
	}
	push(t, q, item("other", 0, 1, "o1"), item("other", 0, 1, "o2"))
	assert.Equal(t, []string{"b1", "o1", "b2", "o2", "b3", "b4", "b5", "b6"}, serve(q, 20))
}

// The share is in slots: a tenant whose requests cost 2 slots each is served half as many
// requests as one whose requests cost 1.
func TestShareIsWeightedBySlots(t *testing.T) {
	t.Parallel()
	q := flowq.New[string](40)
	for i := 0; i < 12; i++ {
		push(t, q, item("wide", 0, 2, "w"), item("narrow", 0, 1, "n"))
	}
	got := serve(q, 12)
	slots := map[string]int{}
	for _, v := range got {
		if v == "w" {
			slots[v] += 2
		} else {
			slots[v]++
		}
	}
	assert.InDelta(t, slots["n"], slots["w"], 2, "slots served per tenant: %v (%v)", slots, got)
}

func TestDepthCountsPerTenant(t *testing.T) {
	t.Parallel()
	q := flowq.New[string](10)
	a1 := item("a", 0, 1, "a1")
	push(t, q, a1, item("a", 0, 1, "a2"), item("b", 3, 1, "b1"))
	assert.Equal(t, 2, q.Depth("a"))
	assert.Equal(t, 1, q.Depth("b"))
	q.Drop(a1)
	q.Drop(a1) // twice: no-op
	assert.False(t, q.Queued(a1))
	assert.Equal(t, 1, q.Depth("a"))
	assert.Equal(t, 2, q.Len())
}

func TestFullQueueEvictsTheLowestPriority(t *testing.T) {
	t.Parallel()
	q := flowq.New[string](3)
	push(t, q, item("batch", 0, 1, "b1"), item("batch", 0, 1, "b2"), item("mid", 1, 1, "m1"))

	ev, err := q.Push(item("chat", 5, 1, "c1"))
	require.NoError(t, err)
	require.NotNil(t, ev)
	assert.Equal(t, "b2", ev.Value, "the newest request of the lowest priority goes")
	assert.False(t, q.Queued(ev))

	ev, err = q.Push(item("batch", 0, 1, "b3"))
	assert.ErrorIs(t, err, flowq.ErrFull, "an arrival of the lowest priority evicts nobody of its own flow")
	assert.Nil(t, ev)
	assert.Equal(t, []string{"c1", "m1", "b1"}, serve(q, 10))
}

func TestFullQueueRefusesAnArrivalBelowEveryone(t *testing.T) {
	t.Parallel()
	q := flowq.New[string](2)
	push(t, q, item("chat", 5, 1, "c1"), item("chat", 5, 1, "c2"))
	_, err := q.Push(item("batch", 0, 1, "b1"))
	assert.ErrorIs(t, err, flowq.ErrFull)
	assert.Equal(t, 2, q.Len())
}

// At one priority, a tenant with nothing queued takes room from the longest flow, so one
// tenant cannot fill the queue and lock the others out.
func TestFullQueueMakesRoomForAnotherTenantOfTheSamePriority(t *testing.T) {
	t.Parallel()
	q := flowq.New[string](4)
	push(t, q, item("batch", 0, 1, "b1"), item("batch", 0, 1, "b2"), item("batch", 0, 1, "b3"), item("batch", 0, 1, "b4"))
	ev, err := q.Push(item("other", 0, 1, "o1"))
	require.NoError(t, err)
	assert.Equal(t, "b4", ev.Value)
	ev, err = q.Push(item("other", 0, 1, "o2"))
	require.NoError(t, err)
	assert.Equal(t, "b3", ev.Value)
	_, err = q.Push(item("other", 0, 1, "o3"))
	assert.ErrorIs(t, err, flowq.ErrFull, "2 against 2: no more evictions")
	assert.Equal(t, 2, q.Depth("batch"))
	assert.Equal(t, 2, q.Depth("other"))
}

func TestPopOfAnItemNotChosenByNext(t *testing.T) {
	t.Parallel()
	q := flowq.New[string](5)
	b := item("b", 0, 3, "b1")
	push(t, q, item("a", 0, 1, "a1"), b)
	q.Pop(b)
	assert.Equal(t, []string{"a1"}, serve(q, 5))
	q.Pop(b) // not queued: no-op
	assert.Zero(t, q.Len())
}
