package pipeline

import (
	"github.com/smg-go/smg/domain/errs"
	"github.com/smg-go/smg/domain/handoff"
)

// checkSamples refuses an n above the gateway's fan-out limit (handoff.MaxSamples) with the
// HTTP PD path's 400 invalid_request and message, before any leg or decode room.
func checkSamples(n int) error {
	if n > handoff.MaxSamples {
		return errs.BadRequest("n=%d exceeds the gateway's fan-out limit of %d samples", n, handoff.MaxSamples)
	}
	return nil
}
