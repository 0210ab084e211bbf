package selection_test

import (
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/app/selection"
	"github.com/smg-go/smg/domain/pairing"
	"github.com/smg-go/smg/domain/policy"
	"github.com/smg-go/smg/domain/worker"
)

func tokenFleet() []*worker.Live {
	return []*worker.Live{
		vw("http://p1:8000", worker.RolePrefill, nixl, nil),
		vw("http://p2:8000", worker.RolePrefill, nixl, nil),
		vw("http://d1:8000", worker.RoleDecode, nixl, nil),
		vw("http://d2:8000", worker.RoleDecode, nixl, nil),
	}
}

func requireNoTokens(t *testing.T, ws []*worker.Live) {
	t.Helper()
	for _, w := range ws {
		assert.Zero(t, w.PromptTokens(), "%s prompt tokens", w.URL)
		assert.Zero(t, w.DecodeTokens(), "%s decode tokens", w.URL)
		assert.Zero(t, w.Load(), "%s requests", w.URL)
	}
}

func TestSelectHoldsTokensPerLegUntilRelease(t *testing.T) {
	t.Parallel()
	ws := tokenFleet()
	_, sel, _ := newSel(t, pairing.ModeLenient, ws...)
	p, d, release, err := sel.Select(&policy.Request{Model: "m", PromptTokens: 1000, DecodeTokens: 64})
	require.NoError(t, err)
	assert.Equal(t, int64(1000), p.PromptTokens(), "the prefill computes the prompt")
	assert.Zero(t, p.DecodeTokens(), "the prefill generates no decode tokens")
	assert.Equal(t, int64(1000), d.PromptTokens(), "the decode holds the prompt's KV")
	assert.Equal(t, int64(64), d.DecodeTokens())
	assert.Equal(t, int64(1064), d.TokenLoad())
	release()
	release() // idempotent
	requireNoTokens(t, ws)

	p, release, err = sel.SelectPrefillOnly(&policy.Request{Model: "m", Tokens: 7, DecodeTokens: 64})
	require.NoError(t, err)
	assert.Equal(t, int64(7), p.TokenLoad(), "Tokens counts when PromptTokens is unset")
	release()
	requireNoTokens(t, ws)
}

func TestSelectReleasesTokensWhenTheDecodePickFails(t *testing.T) {
	t.Parallel()
	ws := tokenFleet()
	st := &fakeStore{}
	for _, w := range ws {
		require.NoError(t, st.Add(w))
	}
	sel := selection.New(st, pairing.ModeLenient, &roundRobin{}, refuse{}, slog.New(&logSink{}))
	_, _, _, err := sel.Select(&policy.Request{Model: "m", PromptTokens: 1000, DecodeTokens: 64})
	require.Error(t, err)
	requireNoTokens(t, ws)
}

func TestSelectTokensReturnToZeroUnderConcurrency(t *testing.T) {
	t.Parallel()
	ws := tokenFleet()
	_, sel, _ := newSel(t, pairing.ModeLenient, ws...)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 200 {
				_, _, release, err := sel.Select(&policy.Request{Model: "m", PromptTokens: g*100 + i, DecodeTokens: i})
				if !assert.NoError(t, err) {
					return
				}
				if i%2 == 0 {
					release()
				} else {
					go release()
				}
			}
		})
	}
	wg.Wait()
	assert.Eventually(t, func() bool {
		for _, w := range ws {
			if w.TokenLoad() != 0 || w.Load() != 0 {
				return false
			}
		}
		return true
	}, 5*time.Second, time.Millisecond)
	requireNoTokens(t, ws)
}

func TestPrefillEndedFreesThePrefillTokensOnce(t *testing.T) {
	t.Parallel()
	ws := tokenFleet()
	_, sel, _ := newSel(t, pairing.ModeLenient, ws...)
	req := &policy.Request{Model: "m", PromptTokens: 1000, DecodeTokens: 64}

	p, d, h, err := sel.SelectHeld(req)
	require.NoError(t, err)
	h.PrefillEnded()
	h.PrefillEnded() // idempotent
	assert.Zero(t, p.TokenLoad(), "the prefill's tokens are gone with its leg")
	assert.Equal(t, int64(1), p.Load(), "its in-flight request stays until Release")
	assert.Equal(t, int64(1064), d.TokenLoad())
	h.Release()
	requireNoTokens(t, ws)

	_, _, h, err = sel.SelectHeld(req)
	require.NoError(t, err)
	h.Release()
	h.PrefillEnded() // after Release: nothing left to free
	requireNoTokens(t, ws)
}

func TestSetPromptTokensReplacesTheEstimate(t *testing.T) {
	t.Parallel()
	ws := tokenFleet()
	_, sel, _ := newSel(t, pairing.ModeLenient, ws...)
	req := &policy.Request{Model: "m", PromptTokens: 1000, DecodeTokens: 64}

	p, d, h, err := sel.SelectHeld(req)
	require.NoError(t, err)
	h.SetPromptTokens(300)
	assert.Equal(t, int64(300), p.TokenLoad())
	assert.Equal(t, int64(364), d.TokenLoad())
	h.SetPromptTokens(2000)
	assert.Equal(t, int64(2000), p.PromptTokens())
	assert.Equal(t, int64(2000), d.PromptTokens())
	h.PrefillEnded()
	h.SetPromptTokens(10) // the prefill's tokens are gone: only the decode's change
	assert.Zero(t, p.TokenLoad())
	assert.Equal(t, int64(74), d.TokenLoad())
	h.Release()
	h.SetPromptTokens(500) // after Release: nothing is held any more
	requireNoTokens(t, ws)
}
