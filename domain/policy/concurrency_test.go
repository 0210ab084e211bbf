package policy_test

import (
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/smg-go/smg/domain/policy"
	"github.com/smg-go/smg/domain/worker"
)

// Every policy's Select is race-free (run with -race) while loads change and, for the
// policies with state, while maintenance runs.
func TestSelectIsSafeForConcurrentUse(t *testing.T) {
	t.Parallel()
	for _, name := range policy.Names() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			o := policy.DefaultOptions()
			o.Sticky = newFakeStore()
			o.Observer = newRecorder()
			o.Loads = func(w *worker.Live) (policy.LoadReport, bool) {
				return policy.LoadReport{Seq: uint64(w.Load()), WaitingReqs: int(w.Load())}, w.Load()%2 == 0
			}
			p := mustNew(t, name, policy.LegPrefill, o)
			ws := workers(6)
			var wg sync.WaitGroup
			for g := range 6 {
				wg.Go(func() {
					for i := range 300 {
						c := ws[:3+(g+i)%4] // candidate sets change between calls
						req := &policy.Request{
							Model: "m", Text: text(uint64(i%7), 300), RoutingKey: fmt.Sprintf("k%d", i%11), Tokens: i,
						}
						idx := p.Select(c, req)
						if !assert.True(t, idx >= 0 && idx < len(c), "index %d of %d", idx, len(c)) {
							return
						}
						release := c[idx].Acquire()
						if i%3 == 0 {
							release()
						}
					}
				})
			}
			wg.Go(func() {
				for range 10 {
					if e, ok := p.(policy.Evicter); ok {
						e.Evict()
					}
					if r, ok := p.(policy.WorkerRemover); ok {
						r.RemoveWorker(ws[5].URL)
					}
				}
			})
			wg.Wait()
		})
	}
}
