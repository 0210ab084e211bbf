package dispatch

import (
	"context"
	"net/http"
	"time"

	"github.com/smg-go/smg/app/selection"
	"github.com/smg-go/smg/domain/handoff"
	"github.com/smg-go/smg/domain/pdmode"
	"github.com/smg-go/smg/domain/policy"
	"github.com/smg-go/smg/domain/worker"
	"github.com/smg-go/smg/ports"
)

// localSelector is a PairSelector that can make the selective-PD decision
// (app/selection.Selector.SelectLocal).
type localSelector interface {
	SelectLocal(req *policy.Request, cfg pdmode.Config) selection.LocalPick
}

// LocalGRPC is implemented by a GRPCPipeline that can serve a decode-only request on one
// gRPC vLLM worker (no prefill leg, no kv_transfer_params). Without it gRPC workers never
// take decode-only requests.
type LocalGRPC interface {
	AttemptLocal(ctx context.Context, w http.ResponseWriter, rq *handoff.Request, dc *worker.Live, hdr http.Header) (committed bool, err error)
}

// DecisionObserver is the optional smg_pd_decisions_total recorder of the metrics adapter
// (a ports.PDMetrics that also implements it).
type DecisionObserver interface {
	IncPDDecision(decision, reason string)
}

// decodeOnly runs the selective-PD decision for one attempt (--selective-pd-*, off by
// default) and, when it says decode-only, serves the attempt on that worker alone: the
// client's body without handoff members (pdmode.LocalBody) on the route's path, relayed
// like a sequential decode leg (first-output deadline, faults blamed on that worker,
// circuit breaker outcomes, TTFT). done is false when the attempt goes on with a PD pair:
// the decision was disaggregated, or the worker cannot be used by this request (it hung
// earlier, or it is a gRPC worker and the pipeline serves no lone worker). The decision is
// counted in smg_pd_decisions_total and named on the access line and the server span.
func (d *Dispatcher) decodeOnly(ctx context.Context, w http.ResponseWriter, rq *handoff.Request,
	preq *policy.Request, hdr http.Header, tr *tries) (done, committed bool, err error) {
	ls, ok := d.sel.(localSelector)
	if !ok || !d.cfg.SelectivePD.Enabled() {
		return false, false, nil
	}
	lp := ls.SelectLocal(preq, d.cfg.SelectivePD)
	dc := lp.Worker
	lg, _ := d.grpc.(LocalGRPC)
	if dc != nil && (tr.unresponsive(dc) || (dc.Mode == worker.ConnGRPC && lg == nil)) {
		lp.Held.Release()
		lp.Decision, lp.Reason, dc = pdmode.Disaggregated, pdmode.ReasonNoLocalWorker, nil
	}
	d.noteDecision(ctx, lp.Decision, lp.Reason)
	if dc == nil {
		return false, false, nil
	}
	committed, err = d.serveAlone(ctx, w, rq, preq, hdr, tr, dc, lp.Held)
	return true, committed, err
}

// serveAlone serves one attempt on dc, a worker that takes the whole request (decode-only
// or prefill-only), and releases held when it ends: over gRPC through LocalGRPC (the caller
// checked the pipeline has it), over HTTP the client's body without handoff members on the
// route's path, relayed like a sequential decode leg (first-output deadline, faults blamed
// on that worker as the decode leg, circuit breaker outcomes, TTFT). The access line names
// dc as the decode leg.
func (d *Dispatcher) serveAlone(ctx context.Context, w http.ResponseWriter, rq *handoff.Request,
	preq *policy.Request, hdr http.Header, tr *tries, dc *worker.Live, held selection.Held) (committed bool, err error) {
	defer held.Release()
	ctx = withTokenHooks(ctx, tokenHooks{prefillEnded: noop, setPrompt: held.SetPromptTokens})
	tr.prefill, tr.decode = "", dc.URL
	ri := ports.RequestInfoFrom(ctx)
	ri.SetLeg("prefill", "", string(dc.Runtime))
	ri.SetLeg("decode", dc.ID, string(dc.Runtime))
	defer func() { avoidFailed(preq, err, dc, dc) }()
	if dc.Mode == worker.ConnGRPC {
		return d.grpc.(LocalGRPC).AttemptLocal(ctx, w, rq, dc, hdr)
	}
	rel, err := d.admitDecode(ctx, dc, 1)
	if err != nil {
		return false, err
	}
	defer rel()
	legCtx, cancel, detach := legContext(ctx)
	o := &open{decode: dc, start: time.Now(), ctx: legCtx, cancel: cancel, detach: detach, reqCtx: ctx,
		stream: rq.Stream, model: metricModel(rq.Model, dc), runtime: string(dc.Runtime), route: rq.Route}
	o.prefillDone.Store(true) // nothing to wait for: a silent worker is the worker's fault
	return d.sequentialDecode(w, o, ports.LegRequest{Worker: dc, Path: rq.Route.Path(), Body: pdmode.LocalBody(rq.Body), Header: hdr,
		Leg: string(worker.RoleDecode)})
}

// noteDecision counts a selective-PD decision and names it on the access line and span.
func (d *Dispatcher) noteDecision(ctx context.Context, dec pdmode.Decision, reason string) {
	if o, ok := d.metrics.(DecisionObserver); ok {
		o.IncPDDecision(string(dec), reason)
	}
	ports.RequestInfoFrom(ctx).SetPDDecision(string(dec), reason)
}
