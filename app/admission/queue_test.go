package admission_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/app/admission"
	"github.com/smg-go/smg/domain/errs"
	"github.com/smg-go/smg/domain/tenant"
	"github.com/smg-go/smg/domain/worker"
	"github.com/smg-go/smg/ports"
)

// queueMetrics records the per-tenant queue series.
type queueMetrics struct {
	mu       sync.Mutex
	depth    map[string]int
	enqueued map[string]int
	outcomes map[string]int // tenant/outcome
	sheds    map[string]int // tenant/reason
}

func newQueueMetrics() *queueMetrics {
	return &queueMetrics{depth: map[string]int{}, enqueued: map[string]int{}, outcomes: map[string]int{}, sheds: map[string]int{}}
}

func (m *queueMetrics) AddQueued(t string, d int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.depth[t] += d
	if d > 0 {
		m.enqueued[t] += d
	}
}

func (m *queueMetrics) ObserveQueueTime(t, outcome string, _ time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.outcomes[t+"/"+outcome]++
}

func (m *queueMetrics) IncQueueShed(t, reason string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.sheds[t+"/"+reason]++
}

func (m *queueMetrics) get(f func(*queueMetrics) int) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return f(m)
}

func as(ctx context.Context, name string, prio int) context.Context {
	return tenant.WithTenant(ctx, tenant.Tenant{Name: name, Priority: prio})
}

// queueHarness is one Admitter with a queue over one decode worker (window 1, whose slot
// the harness holds at start) and a record of the order in which queued dispatches are
// admitted. The slot store polls once a minute, so only releases wake the queue.
type queueHarness struct {
	t       *testing.T
	a       *admission.Admitter
	live    *worker.Live
	metrics *queueMetrics
	pd      *pdMetrics
	held    func()

	mu     sync.Mutex
	order  []string
	errs   map[string]error
	wg     sync.WaitGroup
	queued int64
}

func newQueueHarness(t *testing.T, o admission.Options) *queueHarness {
	h := &queueHarness{t: t, live: window("1"), metrics: newQueueMetrics(), pd: &pdMetrics{}, errs: map[string]error{}}
	o.Logger, o.QueueMetrics, o.Metrics = quiet, h.metrics, h.pd
	if o.QueueSize == 0 {
		o.QueueSize = 16
	}
	if o.QueueWait == 0 {
		o.QueueWait = time.Minute
	}
	h.a = admission.New(newSlots(time.Minute), o)
	held, err := h.a.Admit(guard(t), h.live, 1)
	require.NoError(t, err)
	h.held = held
	return h
}

// enqueue starts a dispatch as ctx's tenant and waits until it is queued. Admitted, it
// records name and releases its slot at once.
func (h *queueHarness) enqueue(ctx context.Context, name string) {
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		release, err := h.a.Admit(ctx, h.live, 1)
		h.mu.Lock()
		if err != nil {
			h.errs[name] = err
		} else {
			h.order = append(h.order, name)
		}
		h.mu.Unlock()
		if err == nil {
			release()
		}
	}()
	h.queued++
	require.Eventually(h.t, func() bool { return h.live.Queued() >= h.queued }, 5*time.Second, time.Millisecond, "%s queued", name)
}

// drain releases the harness's slot and waits for every dispatch to end.
func (h *queueHarness) drain() []string {
	h.held()
	h.wg.Wait()
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.order
}

func shedOf(t *testing.T, err error) *errs.Error {
	t.Helper()
	e, ok := errs.As(err)
	require.True(t, ok, "a *errs.Error, got %v", err)
	assert.Equal(t, 503, e.Status)
	assert.Equal(t, "worker_overload_protection_shed", e.Code)
	assert.Equal(t, "decode", e.Leg)
	assert.GreaterOrEqual(t, e.RetryAfterSecs, 1)
	return e
}

// A higher-priority tenant that arrives last is admitted first when the slot frees; the
// batch tenant's dispatches follow in their order.
func TestQueueServesHigherPriorityFirst(t *testing.T) {
	t.Parallel()
	h := newQueueHarness(t, admission.Options{})
	ctx := guard(t)
	for i := 1; i <= 3; i++ {
		h.enqueue(as(ctx, "batch", 0), fmt.Sprintf("batch%d", i))
	}
	h.enqueue(as(ctx, "chat", 10), "chat")
	assert.Equal(t, []string{"chat", "batch1", "batch2", "batch3"}, h.drain())
	assert.Zero(t, h.live.Queued())
	assert.Equal(t, 3, h.metrics.get(func(m *queueMetrics) int { return m.enqueued["batch"] }))
	assert.Equal(t, 0, h.metrics.get(func(m *queueMetrics) int { return m.depth["batch"] + m.depth["chat"] }))
	assert.Equal(t, 1, h.metrics.get(func(m *queueMetrics) int { return m.outcomes["chat/admitted"] }))
	assert.Equal(t, int64(4), h.pd.waits.Load())
}

// Tenants of one priority share the slots by deficit round robin: a later tenant with two
// queued dispatches is not held back behind the five of the first.
func TestQueueSharesFairlyBetweenTenantsOfOnePriority(t *testing.T) {
	t.Parallel()
	h := newQueueHarness(t, admission.Options{})
	ctx := guard(t)
	for i := 1; i <= 5; i++ {
		h.enqueue(as(ctx, "a", 0), fmt.Sprintf("a%d", i))
	}
	h.enqueue(as(ctx, "b", 0), "b1")
	h.enqueue(as(ctx, "b", 0), "b2")
	assert.Equal(t, []string{"a1", "b1", "a2", "b2", "a3", "a4", "a5"}, h.drain())
}

// A queued dispatch past its deadline is shed with the seed's 503 and Retry-After, and
// counted per tenant; the queue is empty again.
func TestQueuedDispatchPastItsDeadlineIsShed(t *testing.T) {
	t.Parallel()
	h := newQueueHarness(t, admission.Options{QueueWait: 150 * time.Millisecond})
	defer h.held()
	start := time.Now()
	_, err := h.a.Admit(as(guard(t), "batch", 0), h.live, 1)
	elapsed := time.Since(start)
	e := shedOf(t, err)
	assert.Contains(t, e.Message, "while the request was queued")
	assert.GreaterOrEqual(t, elapsed, 150*time.Millisecond)
	assert.Less(t, elapsed, 5*time.Second)
	assert.Zero(t, h.live.Queued())
	assert.Equal(t, 1, h.metrics.get(func(m *queueMetrics) int { return m.sheds["batch/deadline"] }))
	assert.Equal(t, 1, h.metrics.get(func(m *queueMetrics) int { return m.outcomes["batch/shed"] }))
	assert.Equal(t, int64(1), h.pd.sheds.Load(), "a queue shed is an admission shed")
}

// A full queue evicts the newest dispatch of the lowest priority for a higher one, and
// refuses an arrival of the lowest priority; both get the 503.
func TestFullQueueEvictsTheLowestPriority(t *testing.T) {
	t.Parallel()
	h := newQueueHarness(t, admission.Options{QueueSize: 2})
	ctx := guard(t)
	h.enqueue(as(ctx, "batch", 0), "batch1")
	h.enqueue(as(ctx, "batch", 0), "batch2")
	h.queued-- // chat takes batch2's place
	h.enqueue(as(ctx, "chat", 10), "chat")
	require.Eventually(t, func() bool {
		return h.metrics.get(func(m *queueMetrics) int { return m.sheds["batch/evicted"] }) == 1
	}, 5*time.Second, time.Millisecond)
	_, err := h.a.Admit(as(ctx, "batch", 0), h.live, 1)
	e := shedOf(t, err)
	assert.Contains(t, e.Message, "so is the queue")
	assert.Equal(t, []string{"chat", "batch1"}, h.drain())
	e = shedOf(t, h.errs["batch2"])
	assert.Contains(t, e.Message, "evicted")
	assert.Equal(t, 1, h.metrics.get(func(m *queueMetrics) int { return m.sheds["batch/queue_full"] }))
	assert.Equal(t, int64(2), h.pd.sheds.Load())
}

// A client that leaves while queued gets ctx's error, not a shed; the queue forgets it and
// the next dispatch is served.
func TestCancelWhileQueued(t *testing.T) {
	t.Parallel()
	h := newQueueHarness(t, admission.Options{})
	ctx, cancel := context.WithCancel(guard(t))
	h.enqueue(as(ctx, "chat", 10), "gone")
	h.enqueue(as(guard(t), "batch", 0), "batch1")
	cancel()
	require.Eventually(t, func() bool { return h.live.Queued() == 1 }, 5*time.Second, time.Millisecond)
	assert.Equal(t, []string{"batch1"}, h.drain())
	assert.ErrorIs(t, h.errs["gone"], context.Canceled)
	assert.Equal(t, 1, h.metrics.get(func(m *queueMetrics) int { return m.outcomes["chat/cancelled"] }))
	assert.Zero(t, h.pd.sheds.Load())
}

// A dispatch without a tenant waits as before (the queue stays empty: the seed's
// --pd-admission-wait-secs), but while tenants are queued it queues too, as the anonymous
// tenant at priority 0, so it does not jump them.
func TestDispatchWithoutATenantQueuesOnlyBehindOthers(t *testing.T) {
	t.Parallel()
	plain := newQueueHarness(t, admission.Options{Budget: 100 * time.Millisecond})
	_, err := plain.a.Admit(guard(t), plain.live, 1)
	e := shedOf(t, err)
	assert.Contains(t, e.Message, "stayed full for", "the seed's shed")
	assert.Zero(t, plain.metrics.get(func(m *queueMetrics) int { return m.enqueued[""] }), "no tenant, empty queue: not queued")
	plain.held()

	h := newQueueHarness(t, admission.Options{Budget: time.Minute})
	ctx := guard(t)
	h.enqueue(as(ctx, "batch", 0), "batch1")
	h.enqueue(ctx, "anon1")
	h.enqueue(as(ctx, "chat", 10), "chat")
	assert.Equal(t, 1, h.metrics.get(func(m *queueMetrics) int { return m.enqueued[""] }))
	assert.Equal(t, []string{"chat", "batch1", "anon1"}, h.drain())
}

// Admit records the dispatch's tenant for the access line, queued or not.
func TestAdmitRecordsTheTenant(t *testing.T) {
	t.Parallel()
	a := admission.New(newSlots(time.Minute), admission.Options{Logger: quiet, QueueSize: 4, QueueWait: time.Second})
	ri := &ports.RequestInfo{}
	release, err := a.Admit(as(ports.WithRequestInfo(guard(t), ri), "chat", 3), window("2"), 1)
	require.NoError(t, err)
	release()
	assert.Equal(t, "chat", ri.Snapshot().Tenant)
}
