package dispatch

import (
	"context"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/smg-go/smg/domain/handoff"
	"github.com/smg-go/smg/domain/pairing"
	"github.com/smg-go/smg/domain/wire"
	"github.com/smg-go/smg/domain/worker"
	"github.com/smg-go/smg/ports"
)

// RecomputeObserver is the optional smg_pd_recomputed_prompts_total recorder of the metrics
// adapter (a ports.PDMetrics that also implements it).
type RecomputeObserver interface {
	AddRecomputedPrompt(decodeURL, connector string, tokens int)
}

// RecomputeWarnInterval is how often, at most, one pair's recomputes are logged at WARN.
const RecomputeWarnInterval = 30 * time.Second

// Recomputes is the silent-recompute detector of the HTTP dispatcher and the gRPC pipeline.
// The zero value is ready; safe for concurrent use.
type Recomputes struct {
	mu   sync.Mutex
	last map[[2]string]time.Time
}

// Note reads a PD decode's reported usage (prompt and cached tokens) for a silent
// recompute (handoff.RecomputedTokens, the decode's page_size/block_size label as the page):
// the recomputed prompt tokens are added to smg_pd_recomputed_prompts_total{decode,connector}
// when m implements RecomputeObserver, and the pair is named in a WARN at most every
// RecomputeWarnInterval. Called once per decode answer. p or dc nil (a lone worker's answer:
// no handoff, so nothing to recompute) notes nothing.
func (r *Recomputes) Note(ctx context.Context, log *slog.Logger, m ports.PDMetrics, p, dc *worker.Live, prompt, cached int) {
	if p == nil || dc == nil {
		return
	}
	page, _ := strconv.Atoi(pairing.Describe(dc.Worker).Layout.PageSize)
	n := handoff.RecomputedTokens(prompt, cached, page)
	if o, ok := ctx.Value(observationKey{}).(*recomputeObservation); ok {
		o.set(prompt, cached, n)
	}
	if n == 0 {
		return
	}
	connector := RecomputeConnector(p)
	if o, ok := m.(RecomputeObserver); ok {
		o.AddRecomputedPrompt(dc.URL, connector, n)
	}
	if r.due(p.URL, dc.URL, time.Now()) {
		log.WarnContext(ctx, "PD decode recomputed the prompt instead of receiving its KV",
			"prefill", p.DisplayURL(), "decode", dc.DisplayURL(), "connector", connector,
			"prompt_tokens", prompt, "cached_tokens", cached, "recomputed_tokens", n)
	}
}

// due reports whether the pair's WARN may be written at now, and if so notes it.
func (r *Recomputes) due(prefill, decode string, now time.Time) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	k := [2]string{prefill, decode}
	if t, ok := r.last[k]; ok && now.Sub(t) < RecomputeWarnInterval {
		return false
	}
	if r.last == nil {
		r.last = map[[2]string]time.Time{}
	}
	r.last[k] = now
	return true
}

// observationKey keys a probe's *recomputeObservation in a request context.
type observationKey struct{}

// recomputeObservation is what Note read from one request's decode answer (a pair probe's).
type recomputeObservation struct {
	mu                         sync.Mutex
	seen                       bool
	prompt, cached, recomputed int
}

// observeRecompute returns ctx carrying a fresh observation that Note fills in.
func observeRecompute(ctx context.Context) (context.Context, *recomputeObservation) {
	o := &recomputeObservation{}
	return context.WithValue(ctx, observationKey{}, o), o
}

func (o *recomputeObservation) set(prompt, cached, n int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if !o.seen { // the first reading, as Note counts one per answer
		o.seen, o.prompt, o.cached, o.recomputed = true, prompt, cached, n
	}
}

// get returns what was observed; seen is false when Note never ran (no usage to read).
func (o *recomputeObservation) get() (seen bool, prompt, cached, recomputed int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.seen, o.prompt, o.cached, o.recomputed
}

// RecomputeConnector is the connector label of a pair: its prefill's KV transport as the
// pairing descriptor reduces it (nixl, mooncake; SGLang's and TokenSpeed's transfer
// backend), passthrough when it has none.
func RecomputeConnector(p *worker.Live) string {
	if t := pairing.Describe(p.Worker).Transport; t != "" {
		return t
	}
	return wire.ModePassthrough
}
