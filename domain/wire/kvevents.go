package wire

// KV-event subscription names: the worker labels a registration uses to name an engine's
// KV-event publisher, and the Kubernetes pod annotations discovery maps onto them. These
// names are a contract. Wire facts: ../shared/reference/kv-routing.md §1.2 (vLLM endpoint,
// replay endpoint, topic; DP rank r publishes on port + r), §2.1 (SGLang, same layout).
const (
	// LabelKVEventsEndpoint is the ZMQ PUB endpoint to dial, e.g. "tcp://decode-0:5557".
	LabelKVEventsEndpoint = "kv_events_endpoint"
	// LabelKVEventsReplayEndpoint is the ZMQ ROUTER replay endpoint, e.g. "tcp://decode-0:5558".
	LabelKVEventsReplayEndpoint = "kv_events_replay_endpoint"
	// LabelKVEventsTopic is the publisher's topic (engine default "").
	LabelKVEventsTopic = "kv_events_topic"

	// AnnotationKVEventsEndpoint is the pod annotation carrying LabelKVEventsEndpoint.
	AnnotationKVEventsEndpoint = "smg.ai/kv-events-endpoint"
	// AnnotationKVEventsReplayEndpoint is the pod annotation carrying
	// LabelKVEventsReplayEndpoint.
	AnnotationKVEventsReplayEndpoint = "smg.ai/kv-events-replay-endpoint"
)
