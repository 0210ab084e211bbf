// Package kvroute feeds cache_aware with the engines' own KV-cache view: one
// adapters/kvevents gRPC subscription (SubscribeKvEvents) per registered grpc:// worker,
// all writing to one shared domain/kvindex, plus short-lived speculative entries for the
// requests the gateway just routed. Router implements policy.KVPrefixes.
//
// Lifecycle: a worker is subscribed when it is registered (or its status changes) with a
// runtime whose service has SubscribeKvEvents; the subscription is stopped and the
// worker's entries dropped when it is unregistered or comes back with another engine id.
// An engine answering Unimplemented leaves that worker on approximate routing (its stream
// is never live). Workers expanded per DP rank (--dp-aware) and HTTP workers are not
// subscribed yet: HTTP workers need gateway-side tokenization before selection, and a DP
// rank's stream must map to its per-rank worker.
package kvroute
