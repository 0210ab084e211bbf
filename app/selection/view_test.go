package selection_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/adapters/breaker"
	"github.com/smg-go/smg/domain/pairing"
	"github.com/smg-go/smg/domain/policy"
	"github.com/smg-go/smg/domain/worker"
)

// picked runs n selections for model and counts the picked decodes by URL (and prefills).
func picked(t *testing.T, sel interface {
	Select(*policy.Request) (*worker.Live, *worker.Live, func(), error)
}, model string, n int) map[string]int {
	t.Helper()
	got := map[string]int{}
	for range n {
		p, d, release, err := sel.Select(&policy.Request{Model: model})
		require.NoError(t, err)
		got[p.URL]++
		got[d.URL]++
		release()
	}
	return got
}

// The cached view of the available workers follows every change of a worker's
// availability that does not go through the store: stall suspicion, a gate installed or
// removed, a status set on the worker itself. Each change is made after a selection warmed
// the cache, and the next selections see it.
func TestSelectFollowsAvailabilityChanges(t *testing.T) {
	t.Parallel()
	cases := map[string]struct{ out, back func(*worker.Live) }{
		"suspect":    {func(l *worker.Live) { l.SetSuspect(true) }, func(l *worker.Live) { l.SetSuspect(false) }},
		"gate":       {func(l *worker.Live) { l.SetGate(shut{}) }, func(l *worker.Live) { l.SetGate(nil) }},
		"not_ready":  {func(l *worker.Live) { l.SetStatus(worker.StatusNotReady) }, func(l *worker.Live) { l.SetStatus(worker.StatusReady) }},
		"draining":   {func(l *worker.Live) { l.SetStatus(worker.StatusDraining) }, func(l *worker.Live) { l.SetStatus(worker.StatusReady) }},
		"prefill":    {func(l *worker.Live) { l.SetSuspect(true) }, func(l *worker.Live) { l.SetSuspect(false) }},
		"prefill_gw": {func(l *worker.Live) { l.SetGate(shut{}) }, func(l *worker.Live) { l.SetGate(nil) }},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			p1, p2 := vw("http://p1:8000", worker.RolePrefill, nixl, nil, "m"), vw("http://p2:8000", worker.RolePrefill, nixl, nil, "m")
			d1, d2 := vw("http://d1:8000", worker.RoleDecode, nixl, nil, "m"), vw("http://d2:8000", worker.RoleDecode, nixl, nil, "m")
			_, sel, _ := newSel(t, pairing.ModeLenient, p1, p2, d1, d2)
			target := d1
			if name == "prefill" || name == "prefill_gw" {
				target = p1
			}
			require.Positive(t, picked(t, sel, "m", 4)[target.URL], "warm: both workers of each leg are picked")

			c.out(target)
			got := picked(t, sel, "m", 6)
			assert.Zero(t, got[target.URL], "an unavailable worker is never picked: %v", got)

			c.back(target)
			assert.Positive(t, picked(t, sel, "m", 4)[target.URL], "available again, picked again")
		})
	}
}

// A tripped circuit breaker takes its worker out of the cached view at once; when its
// cool-down ends the breaker still waits for (and gets) its half-open probe, the worker
// stays out while half-open, and the passing probe puts it back into selection.
func TestSelectFollowsBreaker(t *testing.T) {
	t.Parallel()
	p := vw("http://p:8000", worker.RolePrefill, nixl, nil, "m")
	d1, d2 := vw("http://d1:8000", worker.RoleDecode, nixl, nil, "m"), vw("http://d2:8000", worker.RoleDecode, nixl, nil, "m")
	st, sel, _ := newSel(t, pairing.ModeLenient, p, d1, d2)
	set := breaker.NewSet(breaker.Settings{FailureThreshold: 1, SuccessThreshold: 1, Timeout: 50 * time.Millisecond}, nil)
	set.Follow(st)
	require.Positive(t, picked(t, sel, "m", 4)[d1.URL], "warm")

	set.Record(d1, 0, errors.New("connection refused"))
	require.Equal(t, breaker.StateOpen, set.Get(d1.ID).State())
	assert.Zero(t, picked(t, sel, "m", 6)[d1.URL], "open: never picked")

	deadline := time.Now().Add(5 * time.Second)
	for !set.ProbeDue(d1) {
		require.True(t, time.Now().Before(deadline), "the probe never came due after the cool-down")
		time.Sleep(10 * time.Millisecond)
	}
	require.Equal(t, breaker.StateHalfOpen, set.Get(d1.ID).State())
	assert.Zero(t, picked(t, sel, "m", 6)[d1.URL], "half-open: only the probe goes there")

	set.Probe(d1, true)
	require.Equal(t, breaker.StateClosed, set.Get(d1.ID).State())
	assert.Positive(t, picked(t, sel, "m", 4)[d1.URL], "closed by its probe: picked again")
}

// A model no worker lists is served by the workers that list no model, whatever its name,
// and a request for a listed model never reaches a worker listing others only.
func TestSelectUnlistedModels(t *testing.T) {
	t.Parallel()
	any1 := vw("http://pa:8000", worker.RolePrefill, nixl, nil)
	pm := vw("http://pm:8000", worker.RolePrefill, nixl, nil, "m")
	da := vw("http://da:8000", worker.RoleDecode, nixl, nil)
	dm := vw("http://dm:8000", worker.RoleDecode, nixl, nil, "m")
	_, sel, _ := newSel(t, pairing.ModeLenient, any1, pm, da, dm)
	for i := range 300 { // more names than the cache keeps views for
		got := picked(t, sel, fmt.Sprintf("client-model-%d", i), 2)
		assert.Equal(t, map[string]int{any1.URL: 2, da.URL: 2}, got)
	}
	got := picked(t, sel, "m", 8)
	assert.Equal(t, 8, got[any1.URL]+got[pm.URL])
	assert.Equal(t, 8, got[da.URL]+got[dm.URL])
	assert.Positive(t, got[pm.URL])
	assert.Positive(t, got[dm.URL])

	p, release, err := sel.SelectPrefillOnly(&policy.Request{Model: "other"})
	require.NoError(t, err)
	assert.Equal(t, any1.URL, p.URL)
	release()
}
