package kvroute

import (
	"github.com/smg-go/smg/domain/kvevent"
	"github.com/smg-go/smg/domain/kvindex"
)

// ApplyBatchForTest feeds b to url's subscription sink (events applied under model) as if
// its stream delivered it. It panics when url has no subscription.
func (r *Router) ApplyBatchForTest(url, model string, b kvevent.Batch) {
	r.mu.Lock()
	s := r.subs[url]
	r.mu.Unlock()
	if s == nil {
		panic("kvroute: no subscription for " + url)
	}
	sink{r: r, s: s, ws: kvindex.WorkerSink{Index: r.index, Worker: url, Model: model}}.ApplyKVBatch(b)
}
