package dispatch

import (
	"context"

	"github.com/smg-go/smg/app/selection"
	"github.com/smg-go/smg/domain/policy"
	"github.com/smg-go/smg/domain/worker"
)

// heldSelector is a PairSelector that can free the prefill's token hold when the prefill
// leg ends (app/selection.Selector). Others keep it until release.
type heldSelector interface {
	SelectHeld(req *policy.Request) (prefill, decode *worker.Live, h selection.Held, err error)
}

// tokenHooks adjust an attempt's token hold while its legs run.
type tokenHooks struct {
	prefillEnded func()      // frees the prefill's tokens (idempotent)
	setPrompt    func(int64) // replaces the estimated prompt size by a counted one
}

// selectPair selects a pair for one attempt: release frees both legs' accounting; the hooks
// adjust the token hold (no-ops for a selector that cannot).
func (d *Dispatcher) selectPair(preq *policy.Request) (p, dc *worker.Live, release func(), hooks tokenHooks, err error) {
	if hs, ok := d.sel.(heldSelector); ok {
		p, dc, h, err := hs.SelectHeld(preq)
		if err != nil {
			return nil, nil, nil, tokenHooks{}, err
		}
		return p, dc, h.Release, tokenHooks{prefillEnded: h.PrefillEnded, setPrompt: h.SetPromptTokens}, nil
	}
	p, dc, release, err = d.sel.Select(preq)
	return p, dc, release, tokenHooks{prefillEnded: noop, setPrompt: func(int64) {}}, err
}

type tokenHooksKey struct{}

// withTokenHooks carries the attempt's token hooks to its legs.
func withTokenHooks(ctx context.Context, h tokenHooks) context.Context {
	return context.WithValue(ctx, tokenHooksKey{}, h)
}

// prefillEnded frees the attempt's prefill token hold (idempotent); a no-op outside an attempt.
func prefillEnded(ctx context.Context) {
	if h, ok := ctx.Value(tokenHooksKey{}).(tokenHooks); ok {
		h.prefillEnded()
	}
}

// PromptTokensCounted tells the attempt running under ctx that its prompt has n tokens, once
// a GRPCPipeline tokenized it: the token load held on both workers (worker.Live.TokenLoad),
// estimated from the body at selection, becomes n. A no-op outside an attempt.
func PromptTokensCounted(ctx context.Context, n int) {
	if h, ok := ctx.Value(tokenHooksKey{}).(tokenHooks); ok {
		h.setPrompt(int64(n))
	}
}

// PrefillLegEnded frees the prefill's token hold of the attempt running under ctx once a
// GRPCPipeline's prefill leg ended, well or not, as the HTTP legs free theirs: a prefill
// holds its prompt tokens on worker.Live.TokenLoad while it computes, not while the decode
// streams. Idempotent; a no-op outside an attempt.
func PrefillLegEnded(ctx context.Context) { prefillEnded(ctx) }

func noop() {}
