package pipeline

import (
	"context"
	"strconv"
	"sync"
	"time"

	"github.com/smg-go/smg/domain/handoff"
	"github.com/smg-go/smg/domain/pairing"
	"github.com/smg-go/smg/domain/worker"
	"github.com/smg-go/smg/ports"
)

// recomputeObserver is the optional smg_pd_recomputed_prompts_total recorder of the metrics
// adapter.
type recomputeObserver interface {
	AddRecomputedPrompt(decodeURL, connector string, tokens int)
}

// recomputeWarnInterval is how often, at most, one pair's recomputes are logged at WARN.
const recomputeWarnInterval = 30 * time.Second

// recomputeWarns rate-limits the recompute WARN per prefill/decode pair.
type recomputeWarns struct {
	mu   sync.Mutex
	last map[[2]string]time.Time
}

// due reports whether the pair's WARN may be written at now, and if so notes it.
func (w *recomputeWarns) due(prefill, decode string, now time.Time) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	k := [2]string{prefill, decode}
	if t, ok := w.last[k]; ok && now.Sub(t) < recomputeWarnInterval {
		return false
	}
	if w.last == nil {
		w.last = map[[2]string]time.Time{}
	}
	w.last[k] = now
	return true
}

// noteDecodeCache reads ev, the first complete of u's decode leg, for a silent recompute
// (handoff.RecomputedTokens over the decode's reported prompt and cached tokens, the decode's
// page_size/block_size label as the page): the recomputed prompt tokens are added to
// smg_pd_recomputed_prompts_total{decode,connector}, and the pair is named in a WARN at most
// every recomputeWarnInterval. Called once per unit.
func (pl *Pipeline) noteDecodeCache(ctx context.Context, u *unit, ev ports.GRPCEvent) {
	p, dc := u.pLeg.Worker, u.dLeg.Worker
	d := pairing.Describe(dc.Worker)
	page, _ := strconv.Atoi(d.Layout.PageSize)
	n := handoff.RecomputedTokens(ev.PromptTokens, ev.CachedTokens, page)
	if n == 0 {
		return
	}
	connector := recomputeConnector(p)
	if o, ok := pl.metrics.(recomputeObserver); ok {
		o.AddRecomputedPrompt(dc.URL, connector, n)
	}
	if pl.recomputes.due(p.URL, dc.URL, time.Now()) {
		pl.log.WarnContext(ctx, "PD decode recomputed the prompt instead of receiving its KV",
			"prefill", p.DisplayURL(), "decode", dc.DisplayURL(), "connector", connector,
			"prompt_tokens", ev.PromptTokens, "cached_tokens", ev.CachedTokens, "recomputed_tokens", n)
	}
}

// recomputeConnector is the connector label of a pair: its prefill's KV transport as the
// pairing descriptor reduces it (nixl, mooncake; SGLang's and TokenSpeed's transfer
// backend), passthrough when it has none.
func recomputeConnector(p *worker.Live) string {
	if t := pairing.Describe(p.Worker).Transport; t != "" {
		return t
	}
	return modePassthrough
}
