package doctor

import (
	"fmt"

	"github.com/smg-go/smg/domain/worker"
)

// KindKVEventsApproximate: with --kv-events-routing, cache_aware scores this worker with
// its approximate tree, not its engine's KV events (no events endpoint, a stream that is
// down or stalled, an engine without the stream, or no tokenizer for its model).
const KindKVEventsApproximate = "kv_events_unavailable"

// KVEventsApproximate is the note for a worker the gateway's /workers shows with
// kv_events.routing "approximate"; state and reason are the listing's.
func KVEventsApproximate(w worker.Worker, state, reason string) Finding {
	return Finding{Kind: KindKVEventsApproximate, Severity: SeverityNote, WorkerID: w.ID, URL: w.URL, Role: string(w.Role),
		Message: fmt.Sprintf("%s %s routes on the approximate prefix tree, not its engine's KV events (stream %s): %s", w.Role, w.ID, state, reason)}
}
