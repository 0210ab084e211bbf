package policy_test

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/smg-go/smg/domain/policy"
	"github.com/smg-go/smg/domain/worker"
)

// A burst between two load reports: power_of_two counts what it sent each worker since
// its report, so two equally reported workers take the burst in turns instead of by coin
// flips; a fresh report (new Seq) clears the credit.
func TestPowerOfTwoCreditsWhatItSentSinceTheReport(t *testing.T) {
	t.Parallel()
	ws := workers(2)
	var mu sync.Mutex
	seq := uint64(1)
	o := policy.DefaultOptions()
	o.Loads = func(*worker.Live) (policy.LoadReport, bool) {
		mu.Lock()
		defer mu.Unlock()
		return policy.LoadReport{Seq: seq, WaitingReqs: 2, GenThroughput: 1000}, true
	}
	p := mustNew(t, "power_of_two", policy.LegDecode, o)
	req := &policy.Request{PromptTokens: 1000}
	for i := range 8 {
		// A tie goes either way; the pick after it goes to the other worker.
		a := p.Select(ws, req)
		assert.NotEqual(t, a, p.Select(ws, req), "pair %d is split", i)
	}
	// 16 picks: 8 each, 8000 tokens credited to each. A new report clears both; a
	// 3000-token pick then lands on either, and the next pick avoids it.
	mu.Lock()
	seq = 2
	mu.Unlock()
	first := p.Select(ws, &policy.Request{PromptTokens: 3000})
	assert.NotEqual(t, first, p.Select(ws, req), "after the reset only the new pick counts")
	assert.Implements(t, (*policy.WorkerRemover)(nil), p)
}
