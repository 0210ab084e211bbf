package handoff

import (
	"bytes"
	"sync"

	"github.com/smg-go/smg/domain/jsonbody"
	"github.com/smg-go/smg/domain/wire"
)

// EventKind tells the relay what to do with an event FanIn processed.
type EventKind uint8

// The event kinds.
const (
	// EventForward: write the returned bytes to the client now.
	EventForward EventKind = iota
	// EventDone: the sample's "[DONE]"; write nothing, that sample's stream is over. After
	// every sample is done, write Final() and then DoneEvent once.
	EventDone
	// EventHeld: a usage-only chunk (empty choices, usage set), absorbed into Final().
	EventHeld
	// EventError: an error payload ({"error":...}); the returned bytes are the event
	// unchanged. Write it, then DoneEvent, and cancel the other samples.
	EventError
)

// String names the kind for logs.
func (k EventKind) String() string {
	switch k {
	case EventForward:
		return "forward"
	case EventDone:
		return "done"
	case EventHeld:
		return "held"
	case EventError:
		return "error"
	}
	return "unknown"
}

// FanIn merges the SSE streams of n single-sample dispatches into one client stream
// (issue #4 item 6). The relay frames each sample's decode stream with an EventSplitter and
// passes every event to Event with its sample index; events of different samples may
// interleave in any order. Chat/completions chunks get choices[].index rewritten to
// index*n + sample; /generate chunks get a top-level "index" = index*n + sample (SGLang's own
// batch-stream field); usage-only chunks are held and summed into one Final chunk. Events
// that are not single-line JSON data (comments, keep-alives) pass through unchanged.
// Safe for concurrent use.
type FanIn struct {
	mu    sync.Mutex
	route Route
	n     int64
	held  *jsonbody.Object // the first usage-only chunk, rendered by Final
	usage usageSum
}

// NewFanIn returns a FanIn for n samples of route.
func NewFanIn(route Route, n int) *FanIn {
	return &FanIn{route: route, n: int64(max(n, 1))}
}

// Event processes one complete event of sample (0 <= sample < n).
func (f *FanIn) Event(sample int, event []byte) (out []byte, kind EventKind) {
	data, ok := EventData(event)
	if !ok {
		return event, EventForward
	}
	if string(data) == wire.SSEDone {
		return nil, EventDone
	}
	o, err := jsonbody.Parse(data)
	if err != nil {
		return event, EventForward
	}
	if e, ok := o.Get(wire.FieldError); ok && !jsonbody.IsNull(e) {
		return event, EventError
	}
	s := int64(sample)
	switch f.route {
	case RouteChat, RouteCompletions:
		choices, ok := o.Get(wire.FieldChoices)
		if !ok || jsonbody.KindOf(choices) != jsonbody.KindArray {
			return event, EventForward
		}
		if n, _ := jsonbody.ArrayLen(choices); n == 0 {
			if u, ok := o.Get(wire.FieldUsage); ok && jsonbody.KindOf(u) == jsonbody.KindObject {
				// event aliases the caller's buffer: keep a copy.
				own, _ := jsonbody.Parse(bytes.Clone(data))
				u, _ = own.Get(wire.FieldUsage)
				f.mu.Lock()
				if f.held == nil {
					f.held = own
				}
				f.usage.add(u)
				f.mu.Unlock()
				return nil, EventHeld
			}
			return event, EventForward
		}
		var all []indexed
		for _, c := range jsonbody.Elements(choices) {
			re, err := reindex(c, f.n, s)
			if err != nil {
				return event, EventForward
			}
			all = append(all, re)
		}
		return DataEvent(o.Edit().Set(wire.FieldChoices, joinArray(all)).Bytes()), EventForward
	case RouteGenerate:
		var idx int64
		if raw, ok := o.Get(wire.FieldIndex); ok {
			idx, _ = jsonbody.Int(raw)
		}
		return DataEvent(o.Edit().SetInt(wire.FieldIndex, idx*f.n+s).Bytes()), EventForward
	}
	return event, EventForward
}

// Final returns the merged usage chunk as an SSE event (the first held chunk with usage
// prompt_tokens counted once, completion_tokens summed, total recomputed), or nil when no
// sample sent a usage-only chunk. Call it once all samples are done, before DoneEvent.
func (f *FanIn) Final() []byte {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.held == nil {
		return nil
	}
	return DataEvent(f.held.Edit().Set(wire.FieldUsage, f.usage.render()).Bytes())
}
