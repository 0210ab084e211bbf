package ports

// KV-event routing states of a worker (KVStreamState.Routing).
const (
	// KVRoutingEvents: cache_aware scores the worker by its engine's KV events.
	KVRoutingEvents = "events"
	// KVRoutingApproximate: cache_aware scores the worker with its approximate tree
	// (KVStreamState.Reason says why).
	KVRoutingApproximate = "approximate"
)

// KVStreamState is one worker's KV-event subscription as /workers and smg doctor show it.
type KVStreamState struct {
	// State is "live" (connected, not stalled), "connecting" (not connected yet or
	// resubscribing), "stalled" (connected but silent while requests were routed there),
	// "disabled" (the engine does not offer the stream) or "none" (no subscription: an HTTP
	// worker whose registration names no events endpoint, or a bad endpoint).
	State string
	// Routing is KVRoutingEvents or KVRoutingApproximate; Reason explains the latter.
	Routing, Reason string
	// Transport ("zmq", "grpc") and Endpoint of the subscription; "" without one.
	Transport, Endpoint string
	// HasSeq and LastSeq: the last sequence number applied.
	HasSeq  bool
	LastSeq uint64
	// Gaps, Resets and DecodeErrors count the stream's sequence gaps, entry resets and
	// undecodable messages since the subscription started.
	Gaps, Resets, DecodeErrors uint64
	// LagMS is arrival minus the engine's timestamp of the last batch, in milliseconds.
	LagMS float64
	// Tokenizer reports whether the gateway can tokenize the worker's model's prompts
	// before selection (without it the worker's requests route approximately).
	Tokenizer bool
}

// KVStreams reports workers' KV-event subscriptions (app/kvroute with --kv-events-routing).
type KVStreams interface {
	// KVStream returns the state of the worker registered at url.
	KVStream(url string, models []string) KVStreamState
}
