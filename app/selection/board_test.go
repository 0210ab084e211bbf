package selection_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/app/selection"
	"github.com/smg-go/smg/domain/pairing"
	"github.com/smg-go/smg/domain/policy"
	"github.com/smg-go/smg/domain/worker"
)

// cache_aware through the selector reads the least-loaded worker from the view's load board:
// loads held before the board existed, holds and releases of other requests, and a view
// rebuilt after an availability change are all followed. Every prompt is new, so each pick
// is cache_aware's min-load path. Not parallel: other tests' status changes move the
// process-wide availability epoch, and a rebuilt view's board orders equal loads afresh.
func TestCacheAwareSelectionFollowsLoadsThroughViews(t *testing.T) {
	st := &fakeStore{}
	var ps, ds []*worker.Live
	for i := range 4 {
		p := vw(fmt.Sprintf("http://p%d:8000", i), worker.RolePrefill, nixl, nil, "m")
		d := vw(fmt.Sprintf("http://d%d:8000", i), worker.RoleDecode, nixl, nil, "m")
		require.NoError(t, st.Add(p))
		require.NoError(t, st.Add(d))
		ps, ds = append(ps, p), append(ds, d)
	}
	sel := fleetSelectorOn(t, st, "cache_aware")
	n := 0
	pick := func() (*worker.Live, *worker.Live, func()) {
		n++
		p, d, release, err := sel.Select(&policy.Request{Model: "m", Text: fmt.Sprintf("prompt %d about something else entirely", n)})
		require.NoError(t, err)
		return p, d, release
	}
	// Other requests in flight before the first selection built the boards.
	hold := func(ws []*worker.Live, loads []int, sign int) {
		for i, k := range loads {
			for range k {
				if sign > 0 {
					ws[i].Hold()
				} else {
					ws[i].Unhold()
				}
			}
		}
	}
	pLoads, dLoads := []int{3, 1, 0, 4}, []int{4, 0, 1, 3}
	hold(ps, pLoads, 1)
	hold(ds, dLoads, 1)
	p, d, rel1 := pick()
	require.Equal(t, ps[2], p)
	require.Equal(t, ds[1], d)

	// The picks hold one request each; one more request lands on each outside selection:
	// the boards follow both, so the next least loaded are ps[1] and ds[2].
	ps[2].Hold()
	ds[1].Hold()
	p, d, rel2 := pick()
	require.Equal(t, ps[1], p)
	require.Equal(t, ds[2], d)
	rel2()

	// A new view (ps[1] and ds[2] out): its boards read the loads again.
	st.SetStatus(ps[1], worker.StatusNotReady)
	st.SetStatus(ds[2], worker.StatusNotReady)
	rel1()
	p, d, rel3 := pick()
	require.Equal(t, ps[2], p, "one request left on it: the least loaded")
	require.Equal(t, ds[1], d)
	rel3()
	ps[2].Unhold()
	ds[1].Unhold()

	// Everything released and back: idle workers go to the fewest picks first, so after
	// eight more picks every worker has had 2 or 3 (ps[2], ds[1]: two so far; ps[1], ds[2]: one).
	st.SetStatus(ps[1], worker.StatusReady)
	st.SetStatus(ds[2], worker.StatusReady)
	hold(ps, pLoads, -1)
	hold(ds, dLoads, -1)
	seen := map[*worker.Live]int{ps[2]: 2, ds[1]: 2, ps[1]: 1, ds[2]: 1}
	for range 8 {
		p, d, release := pick()
		seen[p]++
		seen[d]++
		release()
	}
	for _, w := range append(ps, ds...) {
		require.Contains(t, []int{2, 3}, seen[w], w.URL)
	}
}

func fleetSelectorOn(t *testing.T, st *fakeStore, pol string) *selection.Selector {
	t.Helper()
	pp, err := policy.New(pol, policy.LegPrefill, policy.DefaultOptions())
	require.NoError(t, err)
	pd, err := policy.New(pol, policy.LegDecode, policy.DefaultOptions())
	require.NoError(t, err)
	return selection.New(st, pairing.ModeLenient, pp, pd, nil)
}
