package breaker_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/adapters/breaker"
	"github.com/smg-go/smg/adapters/store/memory"
	"github.com/smg-go/smg/domain/errs"
	"github.com/smg-go/smg/domain/worker"
)

// fleetOf registers n workers of role in a store followed by s and returns them.
func fleetOf(t *testing.T, s *breaker.Set, role worker.Role, n int) []*worker.Live {
	t.Helper()
	store := memory.NewWorkers()
	s.Follow(store)
	ls := make([]*worker.Live, n)
	for i := range ls {
		ls[i] = ready(fmt.Sprintf("%s-%d", role, i), fmt.Sprintf("http://127.0.0.1:%d", 3000+i), role)
		require.NoError(t, store.Add(ls[i]))
	}
	return ls
}

func fail(s *breaker.Set, l *worker.Live, times int) {
	for range times {
		s.Record(l, 500, nil)
	}
}

// Two prefills failing every request (one poisoned request retried on both): only one of
// the pair may be ejected at 50 %, the other keeps serving; once the first closes again,
// the second may open.
func TestEjectionCapKeepsHalfThePoolInRotation(t *testing.T) {
	t.Parallel()
	s := breaker.NewSet(breaker.Settings{FailureThreshold: 2, SuccessThreshold: 1, Timeout: 30 * time.Millisecond,
		MaxEjectionPercent: 50}, nil)
	ps := fleetOf(t, s, worker.RolePrefill, 2)

	fail(s, ps[0], 2)
	fail(s, ps[1], 20)
	assert.False(t, ps[0].Available(), "the first to trip is ejected")
	assert.True(t, ps[1].Available(), "the cap keeps the second in rotation however often it fails")
	assert.Equal(t, breaker.StateClosed, s.Get(ps[1].ID).State())

	// Half-open, the first still holds its place: the second cannot take it, and a failed
	// canary reopens the first.
	time.Sleep(40 * time.Millisecond)
	require.True(t, s.ProbeDue(ps[0]), "half-open after the timeout")
	fail(s, ps[1], 5)
	assert.Equal(t, breaker.StateClosed, s.Get(ps[1].ID).State())
	s.Probe(ps[0], false)
	assert.Equal(t, breaker.StateOpen, s.Get(ps[0].ID).State(), "a failed canary reopens")

	// Closed again (one passing canary), the place is free for the second.
	time.Sleep(40 * time.Millisecond)
	require.True(t, s.ProbeDue(ps[0]))
	s.Probe(ps[0], true)
	assert.Equal(t, breaker.StateClosed, s.Get(ps[0].ID).State())
	fail(s, ps[1], 2)
	assert.False(t, ps[1].Available())
	assert.True(t, ps[0].Available())
}

// The budget is per role: an ejected prefill does not use a decode's place, and a pool of
// one may always eject its worker.
func TestEjectionCapIsPerRole(t *testing.T) {
	t.Parallel()
	s := breaker.NewSet(breaker.Settings{FailureThreshold: 1, Timeout: time.Hour, MaxEjectionPercent: 50}, nil)
	ps := fleetOf(t, s, worker.RolePrefill, 4)
	ds := fleetOf(t, s, worker.RoleDecode, 1)
	for _, p := range ps {
		fail(s, p, 1)
	}
	fail(s, ds[0], 1)
	open := 0
	for _, p := range ps {
		if !p.Available() {
			open++
		}
	}
	assert.Equal(t, 2, open, "50 % of 4 prefills")
	assert.False(t, ds[0].Available(), "the single decode may be ejected")
}

// Unresponsive outcomes open a breaker at their own, lower threshold; a success in between
// starts the count again, and a 500 in between does not.
func TestTimeoutThreshold(t *testing.T) {
	t.Parallel()
	s := breaker.NewSet(breaker.Settings{FailureThreshold: 10, TimeoutFailureThreshold: 3, Timeout: time.Hour}, nil)
	ps := fleetOf(t, s, worker.RolePrefill, 2)
	hung := fmt.Errorf("prefill deadline passed: %w", errs.ErrUnresponsive)

	s.Record(ps[0], 0, hung)
	s.Record(ps[0], 0, hung)
	s.Record(ps[0], 200, nil)
	s.Record(ps[0], 0, hung)
	s.Record(ps[0], 500, nil)
	s.Record(ps[0], 0, hung)
	assert.True(t, ps[0].Available(), "two timeouts since the last success")
	s.Record(ps[0], 0, hung)
	assert.False(t, ps[0].Available(), "the third timeout since the last success opens it")

	assert.Equal(t, breaker.Timeout, breaker.Classify(0, hung))
	assert.Equal(t, "failure", breaker.Timeout.String())
}
