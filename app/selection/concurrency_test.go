package selection_test

import (
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/app/selection"
	"github.com/smg-go/smg/domain/pairing"
	"github.com/smg-go/smg/domain/worker"
)

// Select + Acquire are atomic per leg: concurrent picks with a least-load policy spread the
// load exactly evenly, which fails if two requests could read the same load.
func TestSelectConcurrentAccounting(t *testing.T) {
	t.Parallel()
	var ws []*worker.Live
	for i := range 4 {
		ws = append(ws, vw(fmt.Sprintf("http://p%d:8000", i), worker.RolePrefill, nixl, nil))
		ws = append(ws, vw(fmt.Sprintf("http://d%d:8000", i), worker.RoleDecode, nixl, nil))
		ws = append(ws, vw(fmt.Sprintf("http://x%d:8000", i), worker.RoleDecode, mooncake, nil))
	}
	st := &fakeStore{}
	for _, w := range ws {
		require.NoError(t, st.Add(w))
	}
	sel := selection.New(st, pairing.ModeLenient, leastLoad{}, leastLoad{}, nil)

	const goroutines, each = 8, 25
	var mu sync.Mutex
	var releases []func()
	var wg sync.WaitGroup
	for range goroutines {
		wg.Go(func() {
			for range each {
				p, d, release, err := sel.Select(nil)
				if !assert.NoError(t, err) {
					return
				}
				ok, _ := pairing.Compatible(pairing.Describe(p.Worker), pairing.Describe(d.Worker), pairing.ModeLenient)
				assert.True(t, ok)
				mu.Lock()
				releases = append(releases, release)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	require.Len(t, releases, goroutines*each)
	for _, w := range ws {
		switch w.URL[7] {
		case 'p', 'd':
			assert.Equal(t, int64(goroutines*each/4), w.Load(), w.URL)
		default:
			assert.Zero(t, w.Load(), w.URL)
		}
	}
	var rwg sync.WaitGroup
	for _, r := range releases {
		rwg.Go(r)
	}
	rwg.Wait()
	for _, w := range ws {
		assert.Zero(t, w.Load(), w.URL)
	}
}

// Store changes racing with selections: every pick is a compatible, registered pair.
func TestSelectConcurrentWithChurn(t *testing.T) {
	t.Parallel()
	p := vw("http://p:8000", worker.RolePrefill, nixl, nil)
	st, sel, _ := newSel(t, pairing.ModeLenient, p, vw("http://d:8000", worker.RoleDecode, nixl, nil))
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := range 200 {
			w := vw(fmt.Sprintf("http://churn%d:8000", i), worker.RoleDecode, mooncake, nil)
			_ = st.Add(w)
			st.SetStatus(w, worker.StatusNotReady)
			_, _ = st.Remove(w.ID)
		}
	})
	for range 4 {
		wg.Go(func() {
			for range 200 {
				gp, gd, release, err := sel.Select(nil)
				if assert.NoError(t, err) {
					assert.Same(t, p, gp)
					assert.Equal(t, "http://d:8000", gd.URL)
					release()
				}
			}
		})
	}
	wg.Wait()
	assert.Zero(t, p.Load())
}
