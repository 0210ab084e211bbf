package handoff_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/domain/errs"
	"github.com/smg-go/smg/domain/handoff"
)

// T-HTTP-1 (smg-spec.md §11.2): chunk-local [DONE] detection.
func TestChunkHasDoneTHTTP1(t *testing.T) {
	t.Parallel()
	cases := []struct {
		chunk       string
		atLineStart bool
		want        bool
		meaning     string
	}{
		{"data: [DONE]\n\n", true, true, "standalone sentinel"},
		{"data: {\"x\":1}\n\ndata: [DONE]\n\n", true, true, "sentinel after a data event"},
		{"data: [DONE]\r\n\r\n", true, true, "CRLF endings"},
		{"\ndata: [DONE]\n\n", false, true, "a line boundary occurs inside the chunk"},
		{`data: {"choices":[{"delta":{"tool_calls":[{"function":{"arguments":"// data: [DONE]"}}]}}]}` + "\n\n", true, false, "sentinel text inside JSON"},
		{"data: [DONE]{\"x\":1}\n\n", true, false, "line continues with payload"},
		{"data: [DONE]\n\n", false, false, "chunk begins mid-line"},
		{"data: [DONE]", true, false, "no line terminator yet"},
		{"data: [DONE]\n", true, false, "event delimiter incomplete"},
		{"data: [DONE]\ndata: x\n\n", true, false, "one event whose joined data is not [DONE]"},
		// Beyond the table.
		{"data:[DONE]\n\n", true, true, "no space after the colon is the same data"},
		{"data:  [DONE]\n\n", true, false, "two spaces: data is \" [DONE]\""},
		{": keep-alive\nevent: end\ndata: [DONE]\n\n", true, true, "comments and other fields do not change the data"},
		{"data: [DONE]\r\r", true, true, "CR-only line ends"},
		{"data\n\n", true, false, "empty data"},
		{"dataX: [DONE]\n\n", true, false, "other field name"},
		{"data: x\n\ndata: [DONE]\r\n\n", true, true, "mixed line ends"},
	}
	for _, tc := range cases {
		t.Run(tc.meaning, func(t *testing.T) {
			t.Parallel()
			assert.Equal(t, tc.want, handoff.ChunkHasDone([]byte(tc.chunk), tc.atLineStart), "%q", tc.chunk)
		})
	}
}

func TestDoneScannerAcrossChunks(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name     string
		chunks   []string
		doneAt   int // index of the chunk completing [DONE], -1 for never
		endInEnd int // end offset in that chunk
	}{
		{"split inside the sentinel", []string{"data: {\"a\":1}\n\nda", "ta: [DO", "NE]\n", "\n"}, 3, 1},
		{"CRLF straddling chunks: the second CR already ends the event", []string{"data: [DONE]\r", "\n\r", "\n"}, 1, 2},
		{"bytes after the event", []string{"data: [DONE]\n\ndata: late\n\n"}, 0, 14},
		{"previous chunk ends mid-line", []string{`data: {"t":"`, "data: [DONE]\n\n"}, -1, 0},
		{"JSON payload mentioning the sentinel split", []string{`data: {"t":"data: [DO`, "NE]\"}\n\n"}, -1, 0},
		{"final CR ends the event at the chunk end", []string{"data: [DONE]\n\r"}, 0, 14},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var s handoff.DoneScanner
			got, gotEnd := -1, 0
			for i, c := range tc.chunks {
				if end, done := s.Feed([]byte(c)); done {
					got, gotEnd = i, end
					break
				}
			}
			assert.Equal(t, tc.doneAt, got)
			if tc.doneAt >= 0 {
				assert.Equal(t, tc.endInEnd, gotEnd)
			}
		})
	}
}

func TestEventSplitter(t *testing.T) {
	t.Parallel()
	stream := "data: {\"a\":1}\n\n: ping\n\ndata: x\r\n\r\nevent: e\ndata: y\r\rdata: [DONE]\n\ntail"
	want := []string{"data: {\"a\":1}\n\n", ": ping\n\n", "data: x\r\n\r\n", "event: e\ndata: y\r\r", "data: [DONE]\n\n"}
	for _, step := range []int{1, 2, 3, 7, len(stream)} {
		var sp handoff.EventSplitter
		var got []string
		for i := 0; i < len(stream); i += step {
			require.NoError(t, sp.Write([]byte(stream[i:min(i+step, len(stream))])))
			for {
				ev, ok := sp.Next()
				if !ok {
					break
				}
				got = append(got, string(ev))
			}
		}
		assert.Equal(t, want, got, "step %d", step)
		assert.Equal(t, "tail", string(sp.Flush()), "step %d", step)
	}

	sp := handoff.EventSplitter{Max: 8}
	require.NoError(t, sp.Write([]byte("data: 1")))
	assert.ErrorIs(t, sp.Write([]byte("23")), handoff.ErrEventTooLarge)
}

func TestEventData(t *testing.T) {
	t.Parallel()
	cases := []struct {
		event, data string
		ok          bool
	}{
		{"data: {\"a\":1}\n\n", `{"a":1}`, true},
		{"data:{\"a\":1}\r\n\r\n", `{"a":1}`, true},
		{"data: [DONE]\n\n", "[DONE]", true},
		{"data: a\ndata: b\n\n", "", false},
		{"event: x\ndata: a\n\n", "", false},
		{": c\n\n", "", false},
		{"data: a\n", "", false},
	}
	for _, tc := range cases {
		d, ok := handoff.EventData([]byte(tc.event))
		assert.Equal(t, tc.ok, ok, "%q", tc.event)
		assert.Equal(t, tc.data, string(d), "%q", tc.event)
	}
	assert.True(t, handoff.IsDoneEvent([]byte("data: [DONE]\n\n")))
	assert.False(t, handoff.IsDoneEvent([]byte(`data: {"text":"[DONE]"}`+"\n\n")))
	assert.Equal(t, "data: {}\n\n", string(handoff.DataEvent([]byte("{}"))))
}

func TestErrorEvent(t *testing.T) {
	t.Parallel()
	// T-HTTP-12: upstream text with quotes is JSON-escaped, not pasted raw.
	ev := handoff.ErrorEvent(`{"error":"boom \"quoted\""}`, "Internal Server Error", "decode_error")
	assert.Equal(t, `data: {"error":{"type":"Internal Server Error","code":"decode_error","message":"{\"error\":\"boom \\\"quoted\\\"\"}","param":null}}`+"\n\ndata: [DONE]\n\n", string(ev))

	var sp handoff.EventSplitter
	require.NoError(t, sp.Write(ev))
	first, ok := sp.Next()
	require.True(t, ok)
	data, ok := handoff.EventData(first)
	require.True(t, ok)
	var payload struct {
		Error struct{ Message, Type, Code string } `json:"error"`
	}
	require.NoError(t, json.Unmarshal(data, &payload))
	assert.Equal(t, `{"error":"boom \"quoted\""}`, payload.Error.Message)
	second, ok := sp.Next()
	require.True(t, ok)
	assert.True(t, handoff.IsDoneEvent(second))

	se := handoff.StreamError(&errs.Error{Status: 502, Code: "decode_request_failed", Message: "Decode transport error: EOF"})
	assert.True(t, strings.HasPrefix(string(se), `data: {"error":{"type":"server_error","code":"decode_request_failed","message":"Decode transport error: EOF","param":null}}`))
}
