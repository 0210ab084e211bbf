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
// per leg, all available, with the real round_robin and power_of_two policies on both legs.
// The available workers are cached between availability changes, so the cost must be flat
// from 2 to 4,096 workers per leg (within ±20 %). cache_aware is left out: it reads every
// candidate's load and tree tenant by design (BenchmarkSelectFleetCacheAware).
func BenchmarkSelectFleet(b *testing.B) {
	for _, name := range []string{"round_robin", "power_of_two"} {
		for _, n := range []int{2, 64, 512, 4096} {
			b.Run(fmt.Sprintf("%s/workers=%d", name, n), func(b *testing.B) {
				benchSelect(b, fleetSelector(b, n, name), &policy.Request{Model: "m"})
			})
		}
	}
}

// BenchmarkSelectFleetCacheAware is BenchmarkSelectFleet with cache_aware on both legs and a
// short prompt: the policy itself is O(candidates) (loads and tree tenants of each).
func BenchmarkSelectFleetCacheAware(b *testing.B) {
	for _, n := range []int{2, 64, 512, 4096} {
		b.Run(fmt.Sprintf("workers=%d", n), func(b *testing.B) {
			benchSelect(b, fleetSelector(b, n, "cache_aware"), &policy.Request{Model: "m", Text: "You are a helpful assistant. Hello"})
		})
	}
}

// BenchmarkSelectFleetChurn is BenchmarkSelectFleet (round_robin) with one worker's status
// flipped every 1,000 selections: the cost of rebuilding the cached view, amortized.
func BenchmarkSelectFleetChurn(b *testing.B) {
	for _, n := range []int{64, 512, 4096} {
		b.Run(fmt.Sprintf("workers=%d", n), func(b *testing.B) {
			st := &fakeStore{}
			sel := fleetOn(b, st, n, "round_robin")
			flip := st.ByRole(worker.RoleDecode)[0]
			req := &policy.Request{Model: "m"}
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
		})
	}
}

func benchSelect(b *testing.B, sel *selection.Selector, req *policy.Request) {
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
