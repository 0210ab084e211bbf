package kvevents

import "github.com/smg-go/smg/test/sim/kvcache"

// Tee is a kvcache.Sink publishing every batch to each non-nil sink in order; it is nil
// when every sink is nil (a cache then drops its events) and the sink itself when only one
// is set.
func Tee(sinks ...kvcache.Sink) kvcache.Sink {
	var set tee
	for _, s := range sinks {
		if s != nil {
			set = append(set, s)
		}
	}
	switch len(set) {
	case 0:
		return nil
	case 1:
		return set[0]
	}
	return set
}

type tee []kvcache.Sink

func (t tee) Publish(events []kvcache.Event) {
	for _, s := range t {
		s.Publish(events)
	}
}
