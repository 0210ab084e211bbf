package policy_test

import (
	"bufio"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/domain/policy"
	"github.com/smg-go/smg/domain/worker"
)

var updateTrace = flag.Bool("update-trace", false, "rewrite testdata/cache_aware_trace.txt from the current implementation")

const traceFile = "testdata/cache_aware_trace.txt"

// lastBranch is a policy.Observer keeping the last branch and tree size.
type lastBranch struct {
	mu     sync.Mutex
	branch string
}

func (o *lastBranch) Branch(_, b string)   { o.mu.Lock(); o.branch = b; o.mu.Unlock() }
func (o *lastBranch) TreeSize(string, int) {}

// cacheAwareTrace replays a deterministic workload against cache_aware and returns one line
// per operation: "S <worker> <branch>" for a pick (worker numbered in the fleet, not in the
// candidate list), "E <tree chars>" for an eviction pass, "R <worker> <tree chars>" for a
// worker's removal. Loads are distinct at every pick, so no decision depends on a random
// tie-break. An eviction runs every 25 picks and whenever the text inserted since the last
// one could take a worker's share past 1.25 × MaxTreeSize, so the trace does not depend on
// when an implementation evicts on its own. viaBoard picks with SelectBoard over a load board
// of the candidates (the pair selector's path) instead of Select.
func cacheAwareTrace(t *testing.T, steps int, viaBoard bool) []string {
	t.Helper()
	const maxSize = 80_000
	obs := &lastBranch{}
	o := policy.DefaultOptions()
	o.MaxTreeSize = maxSize
	o.Observer = obs
	p := mustNew(t, "cache_aware", policy.LegPrefill, o).(*policy.CacheAware)
	ws := workers(6)
	r := rand.New(rand.NewPCG(33, 2))
	gen := newPromptGen(5, 8)
	var past []string
	var out []string
	size := func() int { return p.TreeSizes()["m"] }
	grown := 0 // bytes inserted since the last eviction: a bound on any worker's growth
	for step := range steps {
		if step%400 == 399 {
			w := r.IntN(len(ws))
			p.RemoveWorker(ws[w].URL)
			out = append(out, fmt.Sprintf("R %d %d", w, size()))
			continue
		}
		var txt string
		switch k := r.IntN(100); {
		case k < 2:
			txt = ""
		case k < 12 && len(past) > 0:
			old := past[r.IntN(len(past))]
			txt = old[:r.IntN(len(old)+1)] // a prefix of an earlier prompt, maybe all of it
		case k < 17 && len(past) > 0:
			txt = past[r.IntN(len(past))] + " again"
		default:
			txt = gen.next()
		}
		past = append(past, txt)
		if step%25 == 24 || grown+len(txt) > maxSize/4 {
			p.Evict()
			grown = 0
			out = append(out, fmt.Sprintf("E %d", size()))
		}
		for i, l := range r.Perm(40)[:len(ws)] {
			if r.IntN(10) == 0 {
				l += 120 // far above the average: the spill gate opens
			}
			for ws[i].Load() < int64(l) {
				ws[i].Hold()
			}
			for ws[i].Load() > int64(l) {
				ws[i].Unhold()
			}
		}
		perm := r.Perm(len(ws))[:1+r.IntN(len(ws))]
		cands := make([]int, len(perm))
		c := ws[:0:0]
		for i, w := range perm {
			cands[i] = w
			c = append(c, ws[w])
		}
		req := &policy.Request{Model: "m", Text: txt}
		var got int
		if viaBoard {
			b := worker.NewLoadBoard(c)
			got = p.SelectBoard(c, b, req)
			b.Close()
		} else {
			got = p.Select(c, req)
		}
		grown += len(txt)
		require.GreaterOrEqual(t, got, 0)
		out = append(out, fmt.Sprintf("S %d %s", cands[got], obs.branch))
	}
	p.Evict()
	return append(out, fmt.Sprintf("E %d", size()))
}

// The tree's layout is an implementation detail: the picks, branches and tree sizes on a
// recorded trace (recorded from the first implementation, pointer nodes with string edges)
// stay the same, through Select and through SelectBoard (the selector's O(1) load path).
func TestCacheAwareDecisionsMatchTheRecordedTrace(t *testing.T) {
	t.Parallel()
	t.Run("select", func(t *testing.T) { t.Parallel(); matchRecordedTrace(t, false) })
	t.Run("board", func(t *testing.T) { t.Parallel(); matchRecordedTrace(t, true) })
}

func matchRecordedTrace(t *testing.T, viaBoard bool) {
	got := cacheAwareTrace(t, 4000, viaBoard)
	if *updateTrace && !viaBoard {
		require.NoError(t, os.WriteFile(traceFile, []byte(strings.Join(got, "\n")+"\n"), 0o644))
		return
	}
	f, err := os.Open(traceFile)
	require.NoError(t, err)
	defer f.Close()
	var want []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		want = append(want, sc.Text())
	}
	require.NoError(t, sc.Err())
	require.Len(t, got, len(want))
	for i := range want {
		require.Equal(t, want[i], got[i], "operation %d", i)
	}
	kinds := map[string]int{}
	for _, l := range want {
		if f := strings.Fields(l); f[0] == "S" {
			kinds["S "+f[2]]++
		} else {
			kinds[f[0]]++
		}
	}
	t.Logf("trace: %d operations, %v", len(want), kinds)
}
