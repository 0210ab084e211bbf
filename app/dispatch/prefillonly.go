package dispatch

import (
	"context"
	"net/http"

	"github.com/smg-go/smg/app/selection"
	"github.com/smg-go/smg/domain/handoff"
	"github.com/smg-go/smg/domain/pdmode"
	"github.com/smg-go/smg/domain/policy"
	"github.com/smg-go/smg/domain/worker"
)

// prefillAloneSelector is a PairSelector that can pick a worker for a prefill-only request
// (app/selection.Selector.SelectPrefillAlone).
type prefillAloneSelector interface {
	SelectPrefillAlone(req *policy.Request) (*worker.Live, selection.Held)
}

// prefillOnly serves one attempt whole on a prefill-capable worker when the request's
// max_tokens is at most --selective-pd-prefill-only-max-tokens (off by default): a kv_both
// vLLM prefill or a regular worker (pdmode.CanServePrefillOnly), never a SGLang or
// TokenSpeed prefill. done is false when the trigger is off, the request is uncapped or
// above the threshold, or no such worker can take it (none available, it hung earlier in
// this request, or it is a gRPC worker and the pipeline serves no lone worker): the
// decode-only decision and pair selection follow, and nothing is counted here. Served, the
// decision is counted as smg_pd_decisions_total{decision="prefill_only",
// reason="output_below_threshold"} and named on the access line and the server span.
func (d *Dispatcher) prefillOnly(ctx context.Context, w http.ResponseWriter, rq *handoff.Request,
	preq *policy.Request, hdr http.Header, tr *tries) (done, committed bool, err error) {
	ps, ok := d.sel.(prefillAloneSelector)
	if !ok || !d.cfg.SelectivePD.PrefillOnlyWanted(rq.MaxOutputTokens()) {
		return false, false, nil
	}
	pw, held := ps.SelectPrefillAlone(preq)
	if pw == nil {
		return false, false, nil
	}
	if _, lg := d.grpc.(LocalGRPC); tr.unresponsive(pw) || (pw.Mode == worker.ConnGRPC && !lg) {
		held.Release()
		return false, false, nil
	}
	d.noteDecision(ctx, pdmode.PrefillOnly, pdmode.ReasonOutputBelow)
	committed, err = d.serveAlone(ctx, w, rq, preq, hdr, tr, pw, held)
	return true, committed, err
}
