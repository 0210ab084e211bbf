package registry_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/smg-go/smg/adapters/store/memory"
	"github.com/smg-go/smg/app/registry"
)

// BenchmarkRegisterToReady measures Register until the loopback worker is ready: the first
// health probe, runtime/model/server-info detection and the replace in the store.
func BenchmarkRegisterToReady(b *testing.B) {
	srv := (&engine{ownedBy: "sglang", model: "m", serverInfo: true, maxRunning: 8}).start(b)
	store := memory.NewWorkers()
	s := registry.New(store, testConfig(), nil, slog.New(slog.DiscardHandler))
	defer func() { _ = s.Close(context.Background()) }()
	ctx := context.Background()
	b.ResetTimer()
	for range b.N {
		acc, err := s.Register(ctx, registry.Spec{URL: srv.URL, WorkerType: "prefill"})
		if err != nil {
			b.Fatal(err)
		}
		deadline := time.Now().Add(5 * time.Second)
		for {
			if l, err := s.Get(acc.WorkerID); err == nil && l.Healthy() {
				break
			}
			if time.Now().After(deadline) {
				b.Fatal("worker not ready within 5s")
			}
			time.Sleep(50 * time.Microsecond)
		}
		b.StopTimer()
		if err := s.Remove(ctx, acc.WorkerID); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
}
