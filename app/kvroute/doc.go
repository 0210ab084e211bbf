// Package kvroute feeds cache_aware with the engines' own KV-cache view: one
// adapters/kvevents subscription per worker — gRPC SubscribeKvEvents for grpc:// workers,
// ZMQ for workers (HTTP included, each --dp-aware rank on port + rank) whose registration
// names an events endpoint — all writing to one shared domain/kvindex, plus short-lived
// speculative entries for the requests the gateway just routed, shared with the other
// replicas through a ports.KVShare (Redis) when one is configured. Router implements
// policy.KVPrefixes and ports.KVStreams.
//
// Lifecycle: a worker is subscribed when it is registered (or its status changes); the
// subscription is stopped and the worker's entries dropped when it is unregistered or comes
// back with another engine id. An engine answering Unimplemented leaves that worker on
// approximate routing, and so does a stream that is down or stalled (silent StallAfter
// while requests were routed to the worker) until its next batch.
package kvroute
