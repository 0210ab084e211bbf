package admission_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/app/admission"
	"github.com/smg-go/smg/domain/worker"
)

// A worker's queue leaves the Admitter's map once it is empty, so decode workers that come
// and go do not pile up queues; a later request for the same worker gets a fresh queue.
func TestEmptiedQueuesAreDropped(t *testing.T) {
	t.Parallel()
	h := newQueueHarness(t, admission.Options{})
	ctx := guard(t)
	h.enqueue(as(ctx, "batch", 0), "b1")
	assert.Equal(t, 1, admission.QueuesHeld(h.a))
	assert.Equal(t, []string{"b1"}, h.drain())
	require.Eventually(t, func() bool { return admission.QueuesHeld(h.a) == 0 }, 5*time.Second, time.Millisecond)

	// The same worker again: the dispatch queues behind a held slot and is served.
	held, err := h.a.Admit(ctx, h.live, 1)
	require.NoError(t, err)
	h.held = held
	h.queued = 0 // b1 left its queue
	h.enqueue(as(ctx, "batch", 0), "b2")
	assert.Equal(t, []string{"b1", "b2"}, h.drain())
	require.Eventually(t, func() bool { return admission.QueuesHeld(h.a) == 0 }, 5*time.Second, time.Millisecond)
	assert.Zero(t, h.live.Queued())
}

// Many tenants' dispatches over several workers with a one-slot window, racing the pumps
// that drop emptied queues: every dispatch is admitted exactly once, none waits for a queue
// that left the map, and the map ends empty.
func TestQueueDropRacesArrivals(t *testing.T) {
	t.Parallel()
	a := admission.New(newSlots(time.Minute), admission.Options{Logger: quiet, QueueSize: 64, QueueWait: 10 * time.Second})
	ctx := guard(t)
	var workers []*worker.Live
	for i := 0; i < 4; i++ {
		workers = append(workers, worker.NewLive(worker.Worker{ID: fmt.Sprintf("d%d", i), URL: fmt.Sprintf("http://127.0.0.1:%d", 9000+i),
			Role: worker.RoleDecode, Labels: map[string]string{"max_running_requests": "1"}}, worker.StatusReady))
	}
	const perWorker = 50
	var wg sync.WaitGroup
	var mu sync.Mutex
	admitted := 0
	for round := 0; round < perWorker; round++ {
		for i, w := range workers {
			wg.Add(1)
			go func(w *worker.Live, name string) {
				defer wg.Done()
				release, err := a.Admit(as(ctx, name, 0), w, 1)
				if !assert.NoError(t, err) {
					return
				}
				mu.Lock()
				admitted++
				mu.Unlock()
				release()
			}(w, fmt.Sprintf("t%d", (round+i)%3))
		}
	}
	wg.Wait()
	assert.Equal(t, perWorker*len(workers), admitted)
	require.Eventually(t, func() bool { return admission.QueuesHeld(a) == 0 }, 5*time.Second, time.Millisecond)
	for _, w := range workers {
		assert.Zero(t, w.Queued())
	}
}
