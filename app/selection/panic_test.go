package selection_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/domain/pairing"
	"github.com/smg-go/smg/domain/policy"
	"github.com/smg-go/smg/domain/worker"
)

// shut is a gate that refuses everything: an open circuit breaker.
type shut struct{}

func (shut) Allow() bool { return false }

func gated(l *worker.Live) *worker.Live { l.SetGate(shut{}); return l }

// Panic mode: a leg whose ready workers are all gated still serves, least loaded first;
// workers that are not ready never do, and a leg with an available worker keeps to it.
func TestSelectPanicMode(t *testing.T) {
	t.Parallel()
	t.Run("the only decode's breaker is open: it still serves, with a warning", func(t *testing.T) {
		t.Parallel()
		_, sel, sink := newSel(t, pairing.ModeLenient,
			vw("http://p:8000", worker.RolePrefill, nixl, nil), gated(vw("http://d:8000", worker.RoleDecode, nixl, nil)))
		for range 3 {
			p, d, release, err := sel.Select(&policy.Request{})
			require.NoError(t, err)
			assert.Equal(t, "http://p:8000", p.URL)
			assert.Equal(t, "http://d:8000", d.URL)
			assert.Equal(t, int64(1), d.Load(), "the pick is accounted")
			release()
		}
		w := sink.warnings()
		require.Len(t, w, 1, "rate-limited: %v", w)
		assert.Contains(t, w[0], "panic mode")
	})
	t.Run("every gated worker of the leg, least loaded first", func(t *testing.T) {
		t.Parallel()
		d1, d2 := gated(vw("http://d1:8000", worker.RoleDecode, nixl, nil)), gated(vw("http://d2:8000", worker.RoleDecode, nixl, nil))
		_, sel, _ := newSel(t, pairing.ModeLenient, vw("http://p:8000", worker.RolePrefill, nixl, nil), d1, d2)
		d1.Hold()
		defer d1.Unhold()
		_, d, release, err := sel.Select(nil)
		require.NoError(t, err)
		defer release()
		assert.Same(t, d2, d)
	})
	t.Run("both legs gated", func(t *testing.T) {
		t.Parallel()
		_, sel, _ := newSel(t, pairing.ModeLenient,
			gated(vw("http://p:8000", worker.RolePrefill, nixl, nil)), gated(vw("http://d:8000", worker.RoleDecode, nixl, nil)))
		p, d, release, err := sel.Select(nil)
		require.NoError(t, err)
		release()
		assert.Equal(t, []string{"http://p:8000", "http://d:8000"}, []string{p.URL, d.URL})
	})
	t.Run("an available worker is preferred to a gated one", func(t *testing.T) {
		t.Parallel()
		_, sel, sink := newSel(t, pairing.ModeLenient, vw("http://p:8000", worker.RolePrefill, nixl, nil),
			gated(vw("http://d1:8000", worker.RoleDecode, nixl, nil)), vw("http://d2:8000", worker.RoleDecode, nixl, nil))
		for range 4 {
			_, d, release, err := sel.Select(nil)
			require.NoError(t, err)
			release()
			assert.Equal(t, "http://d2:8000", d.URL)
		}
		assert.Empty(t, sink.warnings())
	})
	for _, st := range []worker.Status{worker.StatusFailed, worker.StatusNotReady, worker.StatusDraining, worker.StatusPending} {
		t.Run("a "+string(st)+" worker is never used, gated or not", func(t *testing.T) {
			t.Parallel()
			sick := gated(vw("http://d1:8000", worker.RoleDecode, nixl, nil))
			sick.SetStatus(st)
			sick2 := vw("http://d2:8000", worker.RoleDecode, nixl, nil)
			sick2.SetStatus(st)
			_, sel, sink := newSel(t, pairing.ModeLenient, vw("http://p:8000", worker.RolePrefill, nixl, nil), sick, sick2)
			p, d, release, err := sel.Select(nil)
			assert.Nil(t, p)
			assert.Nil(t, d)
			assert.Nil(t, release)
			requireErr(t, err, 503, "no_available_workers",
				"No available decode workers (all unhealthy or circuits open). Please check if decode servers are configured and healthy.", "decode")
			assert.Empty(t, sink.warnings())
		})
	}
	t.Run("a gated worker serving another model is not used", func(t *testing.T) {
		t.Parallel()
		_, sel, _ := newSel(t, pairing.ModeLenient, vw("http://p:8000", worker.RolePrefill, nixl, nil, "llama"),
			gated(vw("http://d:8000", worker.RoleDecode, nixl, nil, "qwen")))
		_, _, _, err := sel.Select(&policy.Request{Model: "llama"})
		requireErr(t, err, 503, "no_available_workers",
			"No available decode workers (all unhealthy or circuits open). Please check if decode servers are configured and healthy.", "decode")
	})
}
