package grpcengine

import (
	"context"

	sglangpb "github.com/smg-go/smg/adapters/engine/grpcengine/pb/sglang"
	"github.com/smg-go/smg/domain/worker"
	"github.com/smg-go/smg/ports"
)

var _ ports.GRPCLoads = (*Pool)(nil)

// DisaggLoads calls SGLang GetLoads with include ["disagg"] and returns the ranks that
// carry a disaggregation section (the SGLang gRPC servicer's; seed "Metrics"). Other
// runtimes report none: nil, nil.
func (p *Pool) DisaggLoads(ctx context.Context, w worker.Worker) ([]ports.GRPCDisaggLoad, error) {
	if w.Runtime != worker.RuntimeSGLang {
		return nil, nil
	}
	c, err := p.SGLang(w)
	if err != nil {
		return nil, err
	}
	r, err := c.GetLoads(ctx, &sglangpb.GetLoadsRequest{Include: []string{"disagg"}})
	if err != nil {
		return nil, err
	}
	var out []ports.GRPCDisaggLoad
	for _, l := range r.GetLoads() {
		d := l.GetDisaggregation()
		if d == nil {
			continue
		}
		out = append(out, ports.GRPCDisaggLoad{DPRank: int(l.GetDpRank()), Mode: d.GetMode(),
			KVTransferLatencyMs: d.GetKvTransferLatencyMs(), KVTransferGBs: d.GetKvTransferSpeedGbS(),
			PrefillQueueReqs: int(d.GetPrefillPreallocQueueReqs() + d.GetPrefillInflightQueueReqs()),
			DecodeQueueReqs:  int(d.GetDecodePreallocQueueReqs() + d.GetDecodeTransferQueueReqs() + d.GetDecodeRetractedQueueReqs())})
	}
	return out, nil
}
