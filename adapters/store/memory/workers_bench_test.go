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
