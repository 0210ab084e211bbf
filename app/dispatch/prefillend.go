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

// selectPair selects a pair for one attempt: release frees both legs' accounting;
// prefillEnded frees the prefill's tokens once its leg ended (a no-op for a selector that
// cannot).
func (d *Dispatcher) selectPair(preq *policy.Request) (p, dc *worker.Live, release, prefillEnded func(), err error) {
	if hs, ok := d.sel.(heldSelector); ok {
		p, dc, h, err := hs.SelectHeld(preq)
		if err != nil {
			return nil, nil, nil, nil, err
		}
		return p, dc, h.Release, h.PrefillEnded, nil
	}
	p, dc, release, err = d.sel.Select(preq)
	return p, dc, release, noop, err
}

type prefillEndKey struct{}

// withPrefillEnded carries the attempt's prefillEnded to the legs.
func withPrefillEnded(ctx context.Context, f func()) context.Context {
	return context.WithValue(ctx, prefillEndKey{}, f)
}

// prefillEnded frees the attempt's prefill token hold (idempotent); a no-op outside an attempt.
func prefillEnded(ctx context.Context) {
	if f, ok := ctx.Value(prefillEndKey{}).(func()); ok {
		f()
	}
}
func noop() {}
