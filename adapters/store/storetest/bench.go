package storetest

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/smg-go/smg/ports"
)

// BenchClaimRelease measures one Claim followed by one Release on a window that always has
// room, sequentially, and reports the latency percentiles p50-ms and p99-ms of the pair
// next to the usual ns/op.
func BenchClaimRelease(b *testing.B, sc ports.SlotCounter) {
	ctx := context.Background()
	w := Key("http://127.0.0.1:1/bench")
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		l, ok, err := sc.Claim(ctx, w, 1, 64)
		if err != nil || !ok {
			b.Fatalf("claim: ok=%v err=%v", ok, err)
		}
		if err := sc.Release(ctx, l); err != nil {
			b.Fatalf("release: %v", err)
		}
		lat = append(lat, time.Since(t0))
	}
	b.StopTimer()
	slices.Sort(lat)
	pct := func(p float64) float64 {
		return float64(lat[int(p*float64(len(lat)-1))]) / float64(time.Millisecond)
	}
	b.ReportMetric(pct(0.50), "p50-ms")
	b.ReportMetric(pct(0.99), "p99-ms")
}
