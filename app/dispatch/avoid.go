package dispatch

import (
	"github.com/smg-go/smg/domain/errs"
	"github.com/smg-go/smg/domain/policy"
	"github.com/smg-go/smg/domain/wire"
	"github.com/smg-go/smg/domain/worker"
)

// isSelectionError reports an error of pair selection: no available worker on a leg, or no
// compatible pair.
func isSelectionError(err error) bool {
	e, ok := errs.As(err)
	return ok && (e.Code == wire.CodeNoAvailableWorkers || e.Code == wire.CodeNoCompatiblePDPair)
}

// avoidFailed makes a retry of preq prefer other workers than the one that caused a
// retryable failure: the failing leg's worker, or both when the error names no leg.
func avoidFailed(preq *policy.Request, err error, p, dc *worker.Live) {
	if err == nil {
		return
	}
	e, ok := errs.As(err)
	if !ok || !e.Retryable {
		return
	}
	if f := faultOf(err); f != nil && f.ambiguous {
		return // tries.failed avoids the prefill and keeps the decode
	}
	switch e.Leg {
	case "prefill":
		preq.Avoid = append(preq.Avoid, p.URL)
	case "decode":
		preq.Avoid = append(preq.Avoid, dc.URL)
	default:
		preq.Avoid = append(preq.Avoid, p.URL, dc.URL)
	}
}
