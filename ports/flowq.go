package ports

import "time"

// FlowQueueMetrics records the flow-control queue in front of the decode admission window,
// per tenant (the tenant's name; "" for requests without a tenant, which an adapter may
// render as it likes). Every method must be cheap and safe for concurrent use.
type FlowQueueMetrics interface {
	// AddQueued adds delta (+1 on enqueue, -1 on leaving) to the requests queued for
	// tenant on this replica, and counts each enqueue.
	AddQueued(tenant string, delta int)
	// ObserveQueueTime records how long a request of tenant spent queued, by outcome:
	// "admitted", "shed" or "cancelled".
	ObserveQueueTime(tenant, outcome string, d time.Duration)
	// IncQueueShed counts a request of tenant shed by the queue, by reason: "deadline"
	// (waited past its deadline), "evicted" (made room for a higher priority) or
	// "queue_full" (refused on arrival).
	IncQueueShed(tenant, reason string)
}
