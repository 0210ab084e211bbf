package api

import (
	"github.com/smg-go/smg/domain/worker"
	"github.com/smg-go/smg/ports"
)

// KVEventsInfo is a worker's KV-event subscription and whether cache_aware scores it by its
// engine's events, present with --kv-events-routing.
type KVEventsInfo struct {
	State        string  `json:"state" enum:"live,connecting,stalled,disabled,none" doc:"live: connected and current; connecting: not connected (yet); stalled: silent while requests were routed to the worker; disabled: the engine offers no stream; none: no subscription."`
	Routing      string  `json:"routing" enum:"events,approximate" doc:"How cache_aware scores this worker: by its engine's KV events, or with the approximate tree."`
	Reason       string  `json:"reason,omitempty" doc:"Why routing is approximate."`
	Transport    string  `json:"transport,omitempty" enum:"zmq,grpc" doc:"Subscription transport."`
	Endpoint     string  `json:"endpoint,omitempty" doc:"ZMQ endpoint dialed, or the gRPC worker URL."`
	LastSequence *uint64 `json:"last_sequence,omitempty" doc:"Sequence number of the last batch applied."`
	Gaps         uint64  `json:"gaps" doc:"Sequence gaps seen."`
	Resets       uint64  `json:"resets" doc:"Times the worker's entries were dropped (unrecovered gap, engine restart)."`
	DecodeErrors uint64  `json:"decode_errors" doc:"Undecodable messages dropped."`
	LagMS        float64 `json:"lag_ms" doc:"Arrival minus the engine's timestamp of the last batch, milliseconds (clock skew included)."`
	Tokenizer    bool    `json:"tokenizer" doc:"The gateway can tokenize this worker's model's prompts before selection."`
}

// kvInfo renders l's KV-event state, nil without a KVStreams.
func kvInfo(kv ports.KVStreams, l *worker.Live) *KVEventsInfo {
	if kv == nil {
		return nil
	}
	s := kv.KVStream(l.URL, l.Models)
	out := &KVEventsInfo{State: s.State, Routing: s.Routing, Reason: s.Reason, Transport: s.Transport, Endpoint: s.Endpoint,
		Gaps: s.Gaps, Resets: s.Resets, DecodeErrors: s.DecodeErrors, LagMS: s.LagMS, Tokenizer: s.Tokenizer}
	if s.HasSeq {
		seq := s.LastSeq
		out.LastSequence = &seq
	}
	return out
}
