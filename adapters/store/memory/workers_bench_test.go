package memory_test

import (
	"fmt"
	"testing"

	"github.com/smg-go/smg/adapters/store/memory"
	"github.com/smg-go/smg/domain/worker"
)

// BenchmarkWorkersByRole is the per-request read of the dispatch path (16 prefill workers),
// run in parallel against a store that sees no changes.
func BenchmarkWorkersByRole(b *testing.B) {
	s := memory.NewWorkers()
	for i := range 16 {
		_ = s.Add(live(fmt.Sprint(i), fmt.Sprintf("http://127.0.0.1:%d", 1000+i), worker.RolePrefill))
	}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		n := 0
		for pb.Next() {
			n += len(s.ByRole(worker.RolePrefill))
		}
		_ = n
	})
}

// BenchmarkWorkersRegisterFleet registers n workers per leg (prefill and decode) the way the
// registry does: Add as pending, then Replace by the detected, ready worker. One op is the
// whole fleet. "quiet" has no readers; "read" takes a ByRole snapshot of both legs after
// every change, as a router under traffic would (every change then needs a fresh snapshot).
func BenchmarkWorkersRegisterFleet(b *testing.B) {
	for _, n := range []int{2, 512, 4096} {
		for _, read := range []bool{false, true} {
			name := fmt.Sprintf("n=%d/quiet", n)
			if read {
				name = fmt.Sprintf("n=%d/read", n)
			}
			b.Run(name, func(b *testing.B) {
				pending := make([]*worker.Live, 0, 2*n)
				ready := make([]*worker.Live, 0, 2*n)
				for i := range 2 * n {
					role := worker.RolePrefill
					if i%2 == 1 {
						role = worker.RoleDecode
					}
					w := worker.Worker{ID: fmt.Sprint(i), URL: fmt.Sprintf("http://127.0.0.1:%d/%d", 1000+i%60000, i), Role: role}
					pending = append(pending, worker.NewLive(w, worker.StatusPending))
					ready = append(ready, worker.NewLive(w, worker.StatusReady))
				}
				b.ReportAllocs()
				sink := 0
				for b.Loop() {
					s := memory.NewWorkers()
					for i := range pending {
						if err := s.Add(pending[i]); err != nil {
							b.Fatal(err)
						}
						if read {
							sink += len(s.ByRole(worker.RolePrefill)) + len(s.ByRole(worker.RoleDecode))
						}
					}
					for i := range pending {
						if err := s.Replace(pending[i], ready[i]); err != nil {
							b.Fatal(err)
						}
						if read {
							sink += len(s.ByRole(worker.RolePrefill)) + len(s.ByRole(worker.RoleDecode))
						}
					}
				}
				_ = sink
			})
		}
	}
}
