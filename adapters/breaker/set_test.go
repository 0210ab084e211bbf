package breaker_test

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/adapters/breaker"
	"github.com/smg-go/smg/adapters/store/memory"
	"github.com/smg-go/smg/domain/worker"
)

func ready(id, url string, r worker.Role) *worker.Live {
	return worker.NewLive(worker.Worker{ID: id, URL: url, Role: r}, worker.StatusReady)
}

func TestSetFollowsStoreAndGatesWorkers(t *testing.T) {
	t.Parallel()
	store := memory.NewWorkers()
	early := ready("p1", "http://127.0.0.1:11", worker.RolePrefill)
	require.NoError(t, store.Add(early))

	m := newFakeMetrics()
	s := breaker.NewSet(breaker.Settings{FailureThreshold: 2, SuccessThreshold: 1, Timeout: time.Hour}, m)
	s.Follow(store)
	require.NotNil(t, s.Get("p1"), "workers registered before Follow get a breaker")

	late := ready("d1", "http://127.0.0.1:12", worker.RoleDecode)
	require.NoError(t, store.Add(late))
	require.NotNil(t, s.Get("d1"))

	s.Record(late, 0, errors.New("connection refused"))
	s.Record(late, 503, nil)
	assert.False(t, late.Available(), "an open breaker makes the worker unavailable")
	assert.True(t, late.Healthy(), "the status is untouched")
	assert.True(t, early.Available())

	// Other workers' outcomes never touch it, and 4xx never count.
	for range 1000 {
		s.Record(early, 400, nil)
	}
	assert.True(t, early.Available())
	assert.Equal(t, breaker.StateClosed, s.Get("p1").State())
}

// TestSetSurvivesActivationReplace: the registry replaces a worker's *Live when it
// activates (removed, then added with the same ID). The new Live gets a gate, and outcomes
// recorded through the old Live (requests in flight across the swap) reach the breaker of
// the worker with that ID.
func TestSetSurvivesActivationReplace(t *testing.T) {
	t.Parallel()
	store := memory.NewWorkers()
	s := breaker.NewSet(breaker.Settings{FailureThreshold: 1, SuccessThreshold: 1, Timeout: time.Hour}, nil)
	s.Follow(store)

	pending := worker.NewLive(worker.Worker{ID: "w", URL: "http://127.0.0.1:13", Role: worker.RoleDecode}, worker.StatusPending)
	require.NoError(t, store.Add(pending))
	first := s.Get("w")
	require.NotNil(t, first)

	_, err := store.Remove("w")
	require.NoError(t, err)
	assert.Nil(t, s.Get("w"))
	active := ready("w", "http://127.0.0.1:13", worker.RoleDecode)
	require.NoError(t, store.Add(active))
	second := s.Get("w")
	require.NotNil(t, second)

	s.Record(pending, 502, nil) // the stale Live of the same worker
	assert.Equal(t, breaker.StateOpen, second.State())
	assert.False(t, active.Available())
}

func TestSetForgetsRemovedWorkers(t *testing.T) {
	t.Parallel()
	store := memory.NewWorkers()
	m := newFakeMetrics()
	s := breaker.NewSet(breaker.Settings{FailureThreshold: 1}, m)
	s.Follow(store)
	l := ready("x", "http://127.0.0.1:14", worker.RolePrefill)
	require.NoError(t, store.Add(l))
	_, err := store.Remove("x")
	require.NoError(t, err)

	assert.Nil(t, s.Get("x"))
	s.Record(l, 500, nil) // a late outcome of a removed worker is dropped
	st, _, oc := m.snapshot()
	assert.Empty(t, st)
	assert.Empty(t, oc)
	m.mu.Lock()
	assert.Equal(t, []string{"http://127.0.0.1:14"}, m.forgotten)
	m.mu.Unlock()

	s.Record(nil, 500, nil) // tolerated
}

func TestSetReattachesOnURLChange(t *testing.T) {
	t.Parallel()
	m := newFakeMetrics()
	s := breaker.NewSet(breaker.Settings{FailureThreshold: 1, Timeout: time.Hour}, m)
	a := ready("id", "http://127.0.0.1:15", worker.RoleDecode)
	s.Attach(a)
	s.Record(a, 500, nil)
	require.Equal(t, breaker.StateOpen, s.Get("id").State())

	b := ready("id", "http://127.0.0.1:16", worker.RoleDecode)
	assert.Equal(t, breaker.StateClosed, s.Attach(b).State(), "a different URL under the same ID is a new worker")
	assert.True(t, b.Available())
}

// Every failure the Set counts stamps the worker (worker.Live.FailedSince), so a success
// recorded late can tell that the worker failed after it answered; successes, ignored 429s
// and 4xx do not.
func TestSetStampsCountedFailures(t *testing.T) {
	t.Parallel()
	store := memory.NewWorkers()
	w := ready("p1", "http://127.0.0.1:11", worker.RolePrefill)
	require.NoError(t, store.Add(w))
	s := breaker.NewSet(breaker.Settings{FailureThreshold: 10, SuccessThreshold: 1, Timeout: time.Hour}, newFakeMetrics())
	s.Follow(store)
	before := time.Now().Add(-time.Millisecond)
	for _, st := range []int{200, 400, 429} {
		s.Record(w, st, nil)
	}
	assert.False(t, w.FailedSince(before), "no failure counted")
	s.Record(w, 500, nil)
	assert.True(t, w.FailedSince(before))
	time.Sleep(2 * time.Millisecond) // clearly later than that stamp
	after := time.Now()
	assert.False(t, w.FailedSince(after))
	time.Sleep(2 * time.Millisecond)
	s.Record(w, 0, errors.New("connection refused"))
	assert.True(t, w.FailedSince(after), "a transport failure counts too")
}
