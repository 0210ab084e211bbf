package fleet

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	sse "github.com/tmaxmax/go-sse"
)

// Event is one server-sent event: its "event:" name ("" when unnamed) and its data lines
// joined by "\n".
type Event struct {
	Name string
	Data string
}

// Done reports whether the event is the OpenAI/SGLang terminator "data: [DONE]".
func (e Event) Done() bool { return e.Data == "[DONE]" }

// JSON decodes the event's data as a JSON object (fails the test otherwise).
func (e Event) JSON(t testing.TB) map[string]any {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal([]byte(e.Data), &m), "event data is not a JSON object: %q", e.Data)
	return m
}

// IsError reports whether the event's data is an error object ({"error": ...}).
func (e Event) IsError() bool {
	if !strings.HasPrefix(strings.TrimSpace(e.Data), "{") {
		return false
	}
	var m map[string]json.RawMessage
	if json.Unmarshal([]byte(e.Data), &m) != nil {
		return false
	}
	_, ok := m["error"]
	return ok
}

// ParseEvents frames an SSE byte stream into events (github.com/tmaxmax/go-sse); a final
// event without its blank line is dropped, as a browser would.
func ParseEvents(t testing.TB, raw []byte) []Event {
	t.Helper()
	var out []Event
	for ev, err := range sse.Read(bytes.NewReader(raw), nil) {
		require.NoError(t, err, "parse SSE stream %q", raw)
		out = append(out, Event{Name: ev.Type, Data: ev.Data})
	}
	return out
}

// StreamResponse is a complete streamed answer: the raw bytes and their events.
type StreamResponse struct {
	*Response
	Events []Event
}

// Stream POSTs body to path, reads the whole answer and frames it as SSE (a non-SSE error
// answer has no events; check Status first).
func (g *Gateway) Stream(t testing.TB, path string, body any) *StreamResponse {
	t.Helper()
	r := g.Post(t, path, body, nil)
	sr := &StreamResponse{Response: r}
	if r.Status == http.StatusOK {
		sr.Events = ParseEvents(t, r.Body)
	}
	return sr
}

// Data returns the events' data that are JSON objects (not [DONE]), decoded.
func (s *StreamResponse) Data(t testing.TB) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, e := range s.Events {
		if e.Done() {
			continue
		}
		out = append(out, e.JSON(t))
	}
	return out
}

// Errors returns the error events.
func (s *StreamResponse) Errors() []Event {
	var out []Event
	for _, e := range s.Events {
		if e.IsError() {
			out = append(out, e)
		}
	}
	return out
}
