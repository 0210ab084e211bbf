package sim

import (
	"github.com/smg-go/smg/test/sim/kvcache"
	"github.com/smg-go/smg/test/sim/kvevents"
)

// KVEvents is the instance's KV event publishers, one per DP rank, nil when
// Config.KVEventsConfig does not enable them.
func (s *Server) KVEvents() *kvevents.Set { return s.kvev }

// KVEventSink is rank r's kvcache.Sink (the hook a rank's cache publishes through), nil
// without KV events or for a rank the instance does not have.
func (s *Server) KVEventSink(r int) kvcache.Sink {
	if p := s.kvev.Rank(r); p != nil {
		return p
	}
	return nil
}
