package selection_test

import (
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/app/selection"
	"github.com/smg-go/smg/domain/pairing"
	"github.com/smg-go/smg/domain/pdmode"
	"github.com/smg-go/smg/domain/policy"
	"github.com/smg-go/smg/domain/worker"
)

// localFleet: one vLLM prefill, a kv_consumer decode, a kv_both decode, a SGLang decode
// labelled kv_both (it still cannot serve alone) and a regular worker.
func localFleet() (ws []*worker.Live, both, regular *worker.Live) {
	both = vw("http://both:8000", worker.RoleDecode, nixl, nil)
	both.Worker.KVRole = "kv_both"
	sg := worker.NewLive(worker.Worker{ID: "sg", URL: "http://sg:8000", Role: worker.RoleDecode,
		Runtime: worker.RuntimeSGLang, Mode: worker.ConnHTTP, KVRole: "kv_both"}, worker.StatusReady)
	regular = worker.NewLive(worker.Worker{ID: "reg", URL: "http://reg:8000", Role: worker.RoleRegular,
		Runtime: worker.RuntimeSGLang, Mode: worker.ConnHTTP}, worker.StatusReady)
	ws = []*worker.Live{vw("http://p1:8000", worker.RolePrefill, nixl, nil),
		vw("http://cons:8000", worker.RoleDecode, nixl, nil), both, sg, regular}
	return ws, both, regular
}

func TestSelectLocalPicksOnlyWorkersThatCanServeAlone(t *testing.T) {
	t.Parallel()
	ws, both, regular := localFleet()
	_, sel, _ := newSel(t, pairing.ModeLenient, ws...)
	cfg := pdmode.Config{UncachedTokens: 100}
	seen := map[string]int{}
	var picks []selection.LocalPick
	for range 6 {
		lp := sel.SelectLocal(&policy.Request{PromptTokens: 100, DecodeTokens: 8}, cfg)
		require.Equal(t, pdmode.DecodeOnly, lp.Decision)
		seen[lp.Worker.URL]++
		picks = append(picks, lp)
	}
	assert.Equal(t, map[string]int{both.URL: 3, regular.URL: 3}, seen, "least loaded of the two capable workers each time")
	assert.Equal(t, int64(3*108), both.TokenLoad())
	for _, lp := range picks {
		lp.Held.Release()
		lp.Held.Release()
	}
	requireNoTokens(t, ws)

	lp := sel.SelectLocal(&policy.Request{PromptTokens: 101}, cfg)
	assert.Equal(t, pdmode.Disaggregated, lp.Decision, "N+1 uncached tokens")
	assert.Equal(t, pdmode.ReasonUncachedAbove, lp.Reason)
	assert.Nil(t, lp.Worker)
	requireNoTokens(t, ws)
}

func TestSelectLocalWithoutCapableWorker(t *testing.T) {
	t.Parallel()
	ws, _, _ := localFleet()
	_, sel, _ := newSel(t, pairing.ModeLenient, ws[:2]...)
	lp := sel.SelectLocal(&policy.Request{PromptTokens: 1}, pdmode.Config{UncachedTokens: 100})
	assert.Equal(t, []string{string(pdmode.Disaggregated), pdmode.ReasonNoLocalWorker}, []string{string(lp.Decision), lp.Reason})
}

func TestSelectLocalCountsTheCachedPrefixOfCacheAware(t *testing.T) {
	t.Parallel()
	ws, _, _ := localFleet()
	st := &fakeStore{}
	for _, w := range ws {
		require.NoError(t, st.Add(w))
	}
	ca, err := policy.New("cache_aware", policy.LegDecode, policy.DefaultOptions())
	require.NoError(t, err)
	sel := selection.New(st, pairing.ModeLenient, &roundRobin{}, ca, slog.New(&logSink{}))
	cfg := pdmode.Config{UncachedTokens: 100}
	text := strings.Repeat("x", 4000)
	// A long first turn is disaggregated; the pair's decode is not kv_both, so teach the tree
	// through a decode-only pick of a short prompt with the same text on the kv_both worker.
	lp := sel.SelectLocal(&policy.Request{Text: text[:400], PromptTokens: 100}, cfg)
	require.Equal(t, pdmode.DecodeOnly, lp.Decision)
	lp.Held.Release()
	first := lp.Worker
	// A 1000-token prompt whose first tenth the worker holds: 900 uncached > 100.
	lp = sel.SelectLocal(&policy.Request{Text: text[:4000], PromptTokens: 1000}, cfg)
	assert.Equal(t, pdmode.Disaggregated, lp.Decision)
	// A 110-token prompt of 440 bytes with 400 cached: 10 uncached, on that same worker.
	lp = sel.SelectLocal(&policy.Request{Text: text[:440], PromptTokens: 110}, cfg)
	require.Equal(t, pdmode.DecodeOnly, lp.Decision)
	assert.Equal(t, first, lp.Worker)
	lp.Held.Release()
	requireNoTokens(t, ws)
}

func TestSelectLocalTokensReturnToZeroUnderConcurrency(t *testing.T) {
	t.Parallel()
	ws, _, _ := localFleet()
	_, sel, _ := newSel(t, pairing.ModeLenient, ws...)
	cfg := pdmode.Config{UncachedTokens: 50, DecodeMaxRequests: 3}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 200 {
				lp := sel.SelectLocal(&policy.Request{PromptTokens: (g*7 + i) % 100, DecodeTokens: i}, cfg)
				if lp.Worker != nil {
					assert.Less(t, lp.Worker.Load(), int64(4), "the decode-busy guard holds under concurrency")
					lp.Held.SetPromptTokens(int64(i))
					lp.Held.Release()
				}
			}
		})
	}
	wg.Wait()
	requireNoTokens(t, ws)
}
