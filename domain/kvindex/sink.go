package kvindex

import "github.com/smg-go/smg/domain/kvevent"

// WorkerSink feeds one worker's event stream into an Index: it has the method set of
// ports.KVEventSink, so a subscriber (adapters/kvevents) can write to it directly.
type WorkerSink struct {
	Index *Index
	// Worker is the worker id (one per DP rank under --dp-aware); Model the model it serves.
	Worker, Model string
}

// ApplyKVBatch applies b to the worker's entries.
func (s WorkerSink) ApplyKVBatch(b kvevent.Batch) { s.Index.ApplyBatch(s.Worker, s.Model, b) }

// ResetKV drops the worker's entries; its later events rebuild them.
func (s WorkerSink) ResetKV(kvevent.ResetReason) { s.Index.Reset(s.Worker) }
