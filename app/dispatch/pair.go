package dispatch

import (
	"context"
	"log/slog"
	"net/http"

	"github.com/smg-go/smg/domain/handoff"
	"github.com/smg-go/smg/domain/policy"
	"github.com/smg-go/smg/domain/worker"
)

// dispatchPair runs one request on the pair p, dc as its runtimes and connectors expect: the
// gRPC pipeline when a leg is gRPC, MoRI-IO, vLLM's sequential handoff, SGLang's n>1
// fan-out, else the parallel dispatch with a bootstrap room. It is the part of an attempt
// after selection, shared with the pair probe (ProbePair). committed reports that the
// response head reached w.
func (d *Dispatcher) dispatchPair(ctx context.Context, w http.ResponseWriter, rq *handoff.Request,
	preq *policy.Request, p, dc *worker.Live, hdr http.Header) (committed bool, err error) {
	if d.grpc != nil && (p.Mode == worker.ConnGRPC || dc.Mode == worker.ConnGRPC) {
		return d.grpc.Attempt(ctx, w, rq, p, dc, hdr)
	}
	if handoff.IsMoRIIO(p.Worker) || handoff.IsMoRIIO(dc.Worker) {
		return d.moriio(ctx, w, rq, p, dc, hdr) // before the runtime: a MoRI-IO leg never recomputes
	}
	if p.Runtime == worker.RuntimeVLLM {
		return d.sequential(ctx, w, rq, p, dc, hdr)
	}
	if rq.N > 1 && rq.Route.Samples() {
		return d.fanout(ctx, w, rq, preq, p, dc, hdr)
	}
	rel, err := d.admitDecode(ctx, dc, 1)
	if err != nil {
		return false, err
	}
	defer rel()
	legs := handoff.BootstrapPatch(rq.Body, rq.Batch, handoff.TargetFor(p.Worker, dc.Worker, d.cfg.DPAware), nil)
	if d.log.Enabled(ctx, slog.LevelDebug) { // the arguments alone cost four allocations
		d.log.DebugContext(ctx, "PD pair selected", "route", rq.Route.String(), "prefill", p.DisplayURL(), "decode", dc.DisplayURL(), "rooms", legs.Rooms)
	}
	o, err := d.openParallel(ctx, rq, legs, p, dc, hdr)
	if err != nil {
		return false, err
	}
	defer func() { d.finish(o, committed) }()
	return d.relay(w, o)
}
