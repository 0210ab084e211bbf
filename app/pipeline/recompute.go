package pipeline

import (
	"context"

	"github.com/smg-go/smg/ports"
)

// noteDecodeCache reads ev, the first complete of u's decode leg, for a silent recompute
// (dispatch.Recomputes.Note: the decode's reported prompt and cached tokens). Called once
// per unit.
func (pl *Pipeline) noteDecodeCache(ctx context.Context, u *unit, ev ports.GRPCEvent) {
	pl.recomputes.Note(ctx, pl.log, pl.metrics, u.pLeg.Worker, u.dLeg.Worker, ev.PromptTokens, ev.CachedTokens)
}
