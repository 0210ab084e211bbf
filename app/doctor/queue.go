package doctor

import "fmt"

// KindQueueBacklog is the finding of a decode worker whose admission window is full and
// requests wait in the gateway's flow-control queue for it.
const KindQueueBacklog = "decode_queue_backlog"

// QueueBacklog is the warning for decode worker w with queued requests waiting in the
// flow-control queue of the gateway replica asked (GET /workers "queued"; other replicas
// queue their own): its window is saturated, so requests wait (by priority, then fair share
// between tenants) and may be shed with 503 at their deadline.
func QueueBacklog(id, url string, queued int64) Finding {
	return Finding{Kind: KindQueueBacklog, Severity: SeverityWarning, WorkerID: id, URL: url, Role: "decode",
		Message: fmt.Sprintf("decode %s has %d requests queued for its admission window on this gateway replica: the window is full; "+
			"queued requests past --flow-queue-wait-secs are shed with 503 (add decode capacity, or lower the lower-priority tenants' load)", id, queued)}
}
