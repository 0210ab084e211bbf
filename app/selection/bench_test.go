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

// benchFleet registers 5 NIXL prefills and 5 NIXL decodes (the pairable core), plus
// `incompatible` workers, half Mooncake prefills and half MoRI-IO READ decodes, which pair
// with nothing in the fleet.
func benchFleet(b *testing.B, incompatible int) *selection.Selector {
	b.Helper()
	st := &fakeStore{}
	add := func(w *worker.Live) { require.NoError(b, st.Add(w)) }
	for i := range 5 {
		add(vw(fmt.Sprintf("http://p%d:8000", i), worker.RolePrefill, nixl, nil))
		add(vw(fmt.Sprintf("http://d%d:8000", i), worker.RoleDecode, nixl, nil))
	}
	for i := range incompatible / 2 {
		add(vw(fmt.Sprintf("http://xp%d:8000", i), worker.RolePrefill, mooncake, map[string]string{"page_size": fmt.Sprint(i % 7)}))
		add(vw(fmt.Sprintf("http://xd%d:8000", i), worker.RoleDecode, "MoRIIOConnector", map[string]string{"moriio_mode": "read"}))
	}
	return selection.New(st, pairing.ModeLenient, &roundRobin{}, &roundRobin{}, nil)
}

// BenchmarkSelect measures one Select + release with 10 and with 1,000 registered workers
// (990 of them incompatible). The cost must stay flat.
func BenchmarkSelect(b *testing.B) {
	for _, n := range []int{10, 1000} {
		b.Run(fmt.Sprintf("workers=%d", n), func(b *testing.B) {
			sel := benchFleet(b, n-10)
			req := &policy.Request{Model: "m"}
			b.ReportAllocs()
			for b.Loop() {
				_, _, release, err := sel.Select(req)
				if err != nil {
					b.Fatal(err)
				}
				release()
			}
		})
	}
}

// BenchmarkMatrixBuild measures the per-change cost: rebuilding the matrix for the fleet.
func BenchmarkMatrixBuild(b *testing.B) {
	for _, n := range []int{10, 1000} {
		b.Run(fmt.Sprintf("workers=%d", n), func(b *testing.B) {
			sel := benchFleet(b, n-10)
			prefills, decodes := sel.Matrix().Prefills(), sel.Matrix().Decodes()
			b.ReportAllocs()
			for b.Loop() {
				pairing.NewMatrix(prefills, decodes, pairing.ModeLenient)
			}
		})
	}
}

// BenchmarkSelectNoPair measures the failure path (503 no_compatible_pd_pair with its
// explanation) on 1,000 workers that pair with nothing; it is O(workers), not O(pairs).
func BenchmarkSelectNoPair(b *testing.B) {
	st := &fakeStore{}
	for i := range 500 {
		require.NoError(b, st.Add(vw(fmt.Sprintf("http://xp%d:8000", i), worker.RolePrefill, mooncake, nil)))
		require.NoError(b, st.Add(vw(fmt.Sprintf("http://xd%d:8000", i), worker.RoleDecode, nixl, nil)))
	}
	sel := selection.New(st, pairing.ModeLenient, &roundRobin{}, &roundRobin{}, nil)
	b.ReportAllocs()
	for b.Loop() {
		if _, _, _, err := sel.Select(nil); err == nil {
			b.Fatal("paired")
		}
	}
}
