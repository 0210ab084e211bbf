package ports

import "github.com/smg-go/smg/domain/kvevent"

// KVEventSink receives one worker's decoded KV-event stream from a subscriber
// (adapters/kvevents). A subscriber calls it from a single goroutine, batches in sequence
// order without duplicates; implementations must not block for long (the subscriber's
// socket buffers meanwhile).
type KVEventSink interface {
	// ApplyKVBatch applies one batch of the worker's events.
	ApplyKVBatch(b kvevent.Batch)
	// ResetKV drops everything the worker's events contributed so far: the stream lost
	// events it cannot recover, or the engine restarted. Batches that follow rebuild it.
	ResetKV(reason kvevent.ResetReason)
}
