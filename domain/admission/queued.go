package admission

import (
	"fmt"
	"time"

	"github.com/smg-go/smg/domain/errs"
	"github.com/smg-go/smg/domain/wire"
)

// DefaultQueueSize is the default of --flow-queue-size: requests queued per decode worker on
// one replica.
const DefaultQueueSize = 256

// ShedQueuedError is the shed of a request the flow-control queue gave up on: the seed's
// 503 worker_overload_protection_shed with Retry-After (RetryAfterSecs of the queue wait),
// leg "decode". reason says why: "deadline" (it waited its whole deadline), "evicted" (a
// higher-priority request took its place in a full queue) or "queue_full" (refused on
// arrival). The message names the worker, its window, the reason and the time waited.
func ShedQueuedError(workerURL string, window int, reason string, waited, wait time.Duration) *errs.Error {
	var why string
	switch reason {
	case "evicted":
		why = fmt.Sprintf("its admission window of %d is full and the request was evicted from the queue by a higher-priority one after %s",
			window, waited.Round(time.Millisecond))
	case "queue_full":
		why = fmt.Sprintf("its admission window of %d is full and so is the queue in front of it", window)
	default:
		why = fmt.Sprintf("its admission window of %d stayed full for %s while the request was queued", window, waited.Round(time.Millisecond))
	}
	return &errs.Error{
		Status:         503,
		Code:           wire.CodeOverloadShed,
		Message:        fmt.Sprintf("Decode worker '%s' is at capacity: %s", workerURL, why),
		RetryAfterSecs: RetryAfterSecs(wait),
		Leg:            "decode",
	}
}
