package policy_test

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/domain/policy"
	"github.com/smg-go/smg/domain/worker"
)

func TestRoundRobinRotatesIndependentlyPerLeg(t *testing.T) {
	t.Parallel()
	prefill := mustNew(t, "round_robin", policy.LegPrefill, policy.DefaultOptions())
	decode := mustNew(t, "round_robin", policy.LegDecode, policy.DefaultOptions())
	pw, dw := workers(4), workers(4)
	var pPicks, dPicks []int
	for i := range 40 {
		pPicks = append(pPicks, prefill.Select(pw, nil))
		if i%2 == 0 { // the decode leg is called half as often at first...
			dPicks = append(dPicks, decode.Select(dw, nil))
		}
	}
	for len(dPicks) < 40 { // ...and catches up later: its rotation is its own
		dPicks = append(dPicks, decode.Select(dw, nil))
	}
	assert.Equal(t, []int{10, 10, 10, 10}, counts(4, pPicks))
	assert.Equal(t, []int{10, 10, 10, 10}, counts(4, dPicks))
	assert.Equal(t, []int{0, 1, 2, 3, 0, 1, 2, 3}, pPicks[:8])
	assert.Equal(t, []int{0, 1, 2, 3, 0, 1, 2, 3}, dPicks[:8])
}

func TestRandomSpreadsOverAllCandidates(t *testing.T) {
	t.Parallel()
	p := mustNew(t, "random", policy.LegDecode, policy.DefaultOptions())
	ws := workers(4)
	var picks []int
	for range 4000 {
		picks = append(picks, p.Select(ws, nil))
	}
	for i, n := range counts(4, picks) {
		assert.InDelta(t, 1000, n, 200, "worker %d got %d of 4000", i, n) // > 7 sigma
	}
}

func TestPowerOfTwoNeverPicksTheBusierOfTwo(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		loads []int
		never []int // indexes that must never win
		only  int   // when >= 0, the only possible winner
	}{
		{"two workers, the idle one always wins", []int{5, 0}, []int{0}, 1},
		{"two workers, one request apart", []int{3, 4}, []int{1}, 0},
		{"four workers, the busiest never wins", []int{0, 1, 2, 3}, []int{3}, -1},
		{"one worker", []int{9}, nil, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := mustNew(t, "power_of_two", policy.LegDecode, policy.DefaultOptions())
			ws := workers(len(tc.loads))
			for i, l := range tc.loads {
				setLoad(ws[i], l)
			}
			seen := map[int]int{}
			for range 2000 {
				seen[p.Select(ws, nil)]++
			}
			for _, i := range tc.never {
				assert.Zero(t, seen[i], "busier worker %d picked", i)
			}
			if tc.only >= 0 {
				assert.Equal(t, map[int]int{tc.only: 2000}, seen)
			} else {
				assert.Len(t, seen, len(tc.loads)-len(tc.never), "every non-busiest worker wins sometimes")
			}
		})
	}
}

func TestPowerOfTwoScoresLoadReports(t *testing.T) {
	t.Parallel()
	ws := workers(2)
	setLoad(ws[1], 3) // in-flight would favour 0, the reports say 0 is swamped
	reports := map[*worker.Live]policy.LoadReport{
		ws[0]: {Seq: 1, WaitingReqs: 50, GenThroughput: 1000},
		ws[1]: {Seq: 1, WaitingReqs: 0, GenThroughput: 1000},
	}
	o := policy.DefaultOptions()
	o.Loads = func(w *worker.Live) (policy.LoadReport, bool) { r, ok := reports[w]; return r, ok }
	p := mustNew(t, "power_of_two", policy.LegPrefill, o)
	// Each pick credits 1 ("mean prefill", 1024 tokens) until the next report: the first 50
	// picks fit before 1's credit reaches 0's 50 waiting requests.
	for range 50 {
		require.Equal(t, 1, p.Select(ws, nil))
	}
}

func TestLeastLoadPicksTheLeastLoaded(t *testing.T) {
	t.Parallel()
	p := mustNew(t, "least_load", policy.LegDecode, policy.DefaultOptions())
	ws := workers(4)
	for i, l := range []int{4, 2, 1, 3} {
		setLoad(ws[i], l)
	}
	for range 100 {
		require.Equal(t, 2, p.Select(ws, nil))
	}
}

// The caller makes select+account atomic (a per-leg lock around Select and Acquire); with it,
// a burst at idle workers spreads exactly evenly, sequentially and concurrently.
func TestLeastLoadSpreadsABurstEvenly(t *testing.T) {
	t.Parallel()
	t.Run("sequential", func(t *testing.T) {
		t.Parallel()
		p := mustNew(t, "least_load", policy.LegPrefill, policy.DefaultOptions())
		ws := workers(4)
		for range 256 {
			ws[p.Select(ws, nil)].Acquire()
		}
		for i, w := range ws {
			assert.EqualValues(t, 64, w.Load(), "worker %d", i)
		}
	})
	t.Run("concurrent under the caller's leg lock", func(t *testing.T) {
		t.Parallel()
		p := mustNew(t, "least_load", policy.LegPrefill, policy.DefaultOptions())
		ws := workers(4)
		var legLock sync.Mutex
		var wg sync.WaitGroup
		for range 256 {
			wg.Go(func() {
				legLock.Lock()
				ws[p.Select(ws, &policy.Request{})].Acquire()
				legLock.Unlock()
			})
		}
		wg.Wait()
		for i, w := range ws {
			assert.EqualValues(t, 64, w.Load(), "worker %d", i)
		}
	})
}

func TestLeastLoadWithReports(t *testing.T) {
	t.Parallel()
	type rep = policy.LoadReport
	cases := []struct {
		name       string
		reports    []*rep // nil = no report for that worker
		inflight   []int
		maxWaiting int
		want       int
	}{
		{"shorter engine queue wins", []*rep{{WaitingReqs: 4}, {WaitingReqs: 1}, {WaitingReqs: 2}}, []int{0, 0, 0}, 0, 1},
		{"uncached tokens beat request count", []*rep{{WaitingReqs: 1, WaitingUncachedTokens: 9000}, {WaitingReqs: 3}}, []int{0, 0}, 0, 1},
		{"kv pressure breaks an empty-queue tie", []*rep{{TokenUsage: 0.9}, {TokenUsage: 0.2}}, []int{0, 0}, 0, 1},
		{"higher throughput drains faster", []*rep{{WaitingReqs: 2, GenThroughput: 500}, {WaitingReqs: 2, GenThroughput: 4000}}, []int{0, 0}, 0, 1},
		{"unreported worker is costed by in-flight", []*rep{{WaitingReqs: 1}, nil}, []int{0, 3}, 0, 0},
		{"waiting cap vetoes the reported worker", []*rep{{WaitingReqs: 5}, {WaitingReqs: 9}}, []int{0, 0}, 6, 0},
		{"waiting cap vetoes everyone", []*rep{{WaitingReqs: 6}, {WaitingReqs: 9}}, []int{0, 0}, 6, -1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ws := workers(len(tc.reports))
			reports := map[*worker.Live]*rep{}
			for i, r := range tc.reports {
				reports[ws[i]] = r
				setLoad(ws[i], tc.inflight[i])
			}
			o := policy.DefaultOptions()
			o.LeastLoadMaxWaitingRequests = tc.maxWaiting
			o.Loads = func(w *worker.Live) (policy.LoadReport, bool) {
				if r := reports[w]; r != nil {
					return *r, true
				}
				return policy.LoadReport{}, false
			}
			p := mustNew(t, "least_load", policy.LegDecode, o)
			assert.Equal(t, tc.want, p.Select(ws, &policy.Request{}))
		})
	}
}

// Between two reports, least_load credits its own picks so it does not dogpile the worker
// that looked best in the last report; a new report (new Seq) resets the credits.
func TestLeastLoadCreditsPicksUntilTheNextReport(t *testing.T) {
	t.Parallel()
	ws := workers(2)
	var mu sync.Mutex
	reports := map[*worker.Live]policy.LoadReport{
		ws[0]: {Seq: 1, WaitingReqs: 0},
		ws[1]: {Seq: 1, WaitingReqs: 2}, // 2 × 1024 tokens queued
	}
	o := policy.DefaultOptions()
	o.Loads = func(w *worker.Live) (policy.LoadReport, bool) {
		mu.Lock()
		defer mu.Unlock()
		r, ok := reports[w]
		return r, ok
	}
	p := mustNew(t, "least_load", policy.LegPrefill, o)
	var picks []int
	for range 6 {
		picks = append(picks, p.Select(ws, &policy.Request{Tokens: 1024}))
	}
	// 0 takes two picks to catch up with 1's queue, then each tie (random) is followed by the
	// other worker, so the last four split 2/2.
	assert.Equal(t, []int{0, 0}, picks[:2])
	assert.Equal(t, []int{4, 2}, counts(2, picks))

	mu.Lock()
	reports[ws[0]] = policy.LoadReport{Seq: 2, WaitingReqs: 0}
	reports[ws[1]] = policy.LoadReport{Seq: 2, WaitingReqs: 5}
	mu.Unlock()
	assert.Equal(t, 0, p.Select(ws, &policy.Request{Tokens: 1024}), "credits for 0 reset by its new report")
}
