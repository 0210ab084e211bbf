package policy_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/domain/policy"
	"github.com/smg-go/smg/domain/worker"
)

// loadCase gives worker 0 many short requests and worker 1 one long one.
func loadCase() []*worker.Live {
	ws := workers(2)
	setLoad(ws[0], 3)
	ws[0].HoldTokens(3*30, 3*16) // three 30-token prompts, 16 decode tokens each
	setLoad(ws[1], 1)
	ws[1].HoldTokens(30000, 256) // one 30k-token prompt
	return ws
}

func TestLoadMetricPicksByTokensOnlyWhenEnabled(t *testing.T) {
	t.Parallel()
	for _, name := range []string{wireP2, wireLL} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ws := loadCase()
			o := policy.DefaultOptions()
			byReq := mustNew(t, name, policy.LegPrefill, o)
			o.LoadMetric = policy.LoadTokens
			byTok := mustNew(t, name, policy.LegPrefill, o)
			for range 50 {
				assert.Equal(t, 1, byReq.Select(ws, nil), "requests: the worker with one request wins")
				assert.Equal(t, 0, byTok.Select(ws, nil), "tokens: the worker with fewer tokens wins")
			}
		})
	}
}

func TestLoadMetricTokensEdges(t *testing.T) {
	t.Parallel()
	o := policy.DefaultOptions()
	o.LoadMetric = policy.LoadTokens
	for _, name := range []string{wireP2, wireLL} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			p := mustNew(t, name, policy.LegDecode, o)

			ws := workers(2) // one token apart: the lighter always wins
			ws[0].HoldTokens(100, 1)
			ws[1].HoldTokens(100, 0)
			for range 50 {
				assert.Equal(t, 1, p.Select(ws, nil))
			}

			eq := workers(2) // equal tokens, different request counts: a fair tie
			setLoad(eq[0], 5)
			eq[0].HoldTokens(50, 50)
			eq[1].HoldTokens(100, 0)
			seen := [2]int{}
			for range 200 {
				seen[p.Select(eq, nil)]++
			}
			assert.Positive(t, seen[0], "a tie in tokens is broken at random")
			assert.Positive(t, seen[1], "a tie in tokens is broken at random")
		})
	}
}

func TestLoadMetricTokensScoresUnreportedWorkersByTokens(t *testing.T) {
	t.Parallel()
	ws := loadCase()
	rep := workers(1)[0] // a reported third worker turns the report-based score on
	reports := map[*worker.Live]policy.LoadReport{rep: {Seq: 1, WaitingReqs: 100, GenThroughput: 1000}}
	o := policy.DefaultOptions()
	o.LoadMetric = policy.LoadTokens
	o.Loads = func(w *worker.Live) (policy.LoadReport, bool) { r, ok := reports[w]; return r, ok }
	p := mustNew(t, wireLL, policy.LegPrefill, o)
	for range 20 {
		assert.Equal(t, 0, p.Select([]*worker.Live{ws[0], ws[1], rep}, nil))
	}
}

func TestLoadMetricRejectsUnknownValues(t *testing.T) {
	t.Parallel()
	o := policy.DefaultOptions()
	require.Equal(t, policy.LoadRequests, o.LoadMetric, "requests is the default")
	o.LoadMetric = "bytes"
	_, err := policy.New(wireP2, policy.LegPrefill, o)
	require.ErrorIs(t, err, policy.ErrInvalidOptions)
	assert.Contains(t, err.Error(), "--load-metric")
}

const (
	wireP2 = "power_of_two"
	wireLL = "least_load"
)
