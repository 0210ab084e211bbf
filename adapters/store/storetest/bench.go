package storetest

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/smg-go/smg/ports"
)

// BenchClaimRelease measures one Claim followed by one Release on a window that always has
// room, sequentially, and reports the latency percentiles p50-ms, p99-ms and p999-ms of the
// pair next to the usual ns/op, and the pairs that failed (a store call ran into the
// adapter's timeout) as errors; more than 1% failing fails the benchmark.
func BenchClaimRelease(b *testing.B, sc ports.SlotCounter) {
	ctx := context.Background()
	w := Key("http://127.0.0.1:1/bench")
	lat := make([]time.Duration, 0, b.N)
	errs := 0
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		l, ok, err := sc.Claim(ctx, w, 1, 1<<20)
		if err != nil || !ok {
			errs++
			continue
		}
		if err := sc.Release(ctx, l); err != nil {
			errs++
			continue
		}
		lat = append(lat, time.Since(t0))
	}
	b.StopTimer()
	if errs*100 > b.N || len(lat) == 0 {
		b.Fatalf("%d of %d claim+release pairs failed", errs, b.N)
	}
	slices.Sort(lat)
	pct := func(p float64) float64 {
		return float64(lat[int(p*float64(len(lat)-1))]) / float64(time.Millisecond)
	}
	b.ReportMetric(pct(0.50), "p50-ms")
	b.ReportMetric(pct(0.99), "p99-ms")
	b.ReportMetric(pct(0.999), "p999-ms")
	b.ReportMetric(float64(errs), "errors")
}
