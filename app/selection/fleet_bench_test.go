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

// BenchmarkSelectFleet measures one Select + release on a fleet of n pairable NIXL workers
// per leg, all available, with the real round_robin, power_of_two and cache_aware policies on
// both legs (cache_aware with a short repeated prompt). The available workers are cached
// between availability changes, and cache_aware reads the least-loaded candidate from the
// view's load board, so the cost must be flat from 2 to 4,096 workers per leg (within ±20 %).
// The first selection, which builds the view and its boards, is made before the timer starts.
func BenchmarkSelectFleet(b *testing.B) {
	req := &policy.Request{Model: "m", Text: "You are a helpful assistant. Hello"}
	for _, name := range []string{"round_robin", "power_of_two", "cache_aware"} {
		for _, n := range []int{2, 64, 512, 4096} {
			b.Run(fmt.Sprintf("%s/workers=%d", name, n), func(b *testing.B) {
				benchSelect(b, fleetSelector(b, n, name), req)
			})
		}
	}
}

// BenchmarkSelectFleetChurn is BenchmarkSelectFleet with one worker's status flipped every
// 1,000 selections: the cost of rebuilding the cached view (and, for cache_aware, its load
// boards), amortized.
func BenchmarkSelectFleetChurn(b *testing.B) {
	for _, name := range []string{"round_robin", "cache_aware"} {
		for _, n := range []int{64, 512, 4096} {
			b.Run(fmt.Sprintf("%s/workers=%d", name, n), func(b *testing.B) {
				benchChurn(b, n, name)
			})
		}
	}
}

func benchChurn(b *testing.B, n int, name string) {
	st := &fakeStore{}
	sel := fleetOn(b, st, n, name)
	flip := st.ByRole(worker.RoleDecode)[0]
	req := &policy.Request{Model: "m", Text: "You are a helpful assistant. Hello"}
	b.ReportAllocs()
	k := 0
	for b.Loop() {
		if k++; k%1000 == 0 {
			st.SetStatus(flip, map[bool]worker.Status{true: worker.StatusReady, false: worker.StatusNotReady}[flip.Status() != worker.StatusReady])
		}
		_, _, release, err := sel.Select(req)
		if err != nil {
			b.Fatal(err)
		}
		release()
	}
}

func benchSelect(b *testing.B, sel *selection.Selector, req *policy.Request) {
	_, _, release, err := sel.Select(req)
	if err != nil {
		b.Fatal(err)
	}
	release()
	b.ReportAllocs()
	for b.Loop() {
		_, _, release, err := sel.Select(req)
		if err != nil {
			b.Fatal(err)
		}
		release()
	}
}

func fleetSelector(b *testing.B, n int, pol string) *selection.Selector {
	return fleetOn(b, &fakeStore{}, n, pol)
}

// fleetOn registers n NIXL prefills and n NIXL decodes serving "m" in st and returns a
// selector with pol on both legs.
func fleetOn(b *testing.B, st *fakeStore, n int, pol string) *selection.Selector {
	b.Helper()
	for i := range n {
		require.NoError(b, st.Add(vw(fmt.Sprintf("http://p%d:8000", i), worker.RolePrefill, nixl, nil, "m")))
		require.NoError(b, st.Add(vw(fmt.Sprintf("http://d%d:8000", i), worker.RoleDecode, nixl, nil, "m")))
	}
	pp, err := policy.New(pol, policy.LegPrefill, policy.DefaultOptions())
	require.NoError(b, err)
	pd, err := policy.New(pol, policy.LegDecode, policy.DefaultOptions())
	require.NoError(b, err)
	return selection.New(st, pairing.ModeLenient, pp, pd, nil)
}
