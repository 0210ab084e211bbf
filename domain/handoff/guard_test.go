package handoff_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/domain/handoff"
)

// feedAll feeds chunks through a guard and returns what it emitted and the first error.
func feedAll(g *handoff.LineGuard, chunks ...string) (string, error) {
	var out strings.Builder
	for _, c := range chunks {
		if err := g.Feed([]byte(c), func(b []byte) error { out.Write(b); return nil }); err != nil {
			return out.String(), err
		}
	}
	return out.String(), nil
}

func TestLineGuard(t *testing.T) {
	t.Parallel()
	good := "data: {\"a\":1}\n\n: keep-alive\n\nevent: message_stop\ndata: {\"type\":\"message_stop\"}\n\ndata: [DONE]\n\n"
	cases := []struct {
		name   string
		chunks []string
		want   string
		bad    bool
		held   bool
	}{
		{"valid events pass whole", []string{good}, good, false, false},
		{"an event split across reads is emitted once complete", []string{"data: {\"a\"", ":1}\n", "\n"}, "data: {\"a\":1}\n\n", false, false},
		{"CRLF lines", []string{"data: {\"a\":1}\r\n\r\n"}, "data: {\"a\":1}\r\n\r\n", false, false},
		{"a garbled event is not emitted, what came before is",
			[]string{"data: {\"a\":1}\n\ndata: {\"id\": \"x\", \"choices\": [\n\ndata: [DONE]\n\n"}, "data: {\"a\":1}\n\n", true, false},
		{"a garbled event split across reads", []string{"data: {\"a\":1}\n\ndata: {\"b\"", ": [\n"}, "data: {\"a\":1}\n\n", true, false},
		{"a partial last line is held", []string{"data: {\"a\":1}\n\ndata: {\"b\""}, "data: {\"a\":1}\n\n", false, true},
		{"data without a space", []string{"data:{\"a\":1}\n"}, "data:{\"a\":1}\n", false, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var g handoff.LineGuard
			out, err := feedAll(&g, tc.chunks...)
			assert.Equal(t, tc.want, out)
			if tc.bad {
				assert.ErrorIs(t, err, handoff.ErrMalformedEvent)
			} else {
				assert.NoError(t, err)
			}
			assert.Equal(t, tc.held, g.Pending())
		})
	}
	var g handoff.LineGuard
	_, err := feedAll(&g, "event: x\ndata: {\"error\":{\"message\":\"boom\"}}\n\n")
	require.NoError(t, err)
	msg, ok := handoff.EngineErrorEvent(g.First)
	assert.True(t, ok)
	assert.Equal(t, "boom", msg)
}

func TestLineGuardEmitErrorStops(t *testing.T) {
	t.Parallel()
	var g handoff.LineGuard
	stop := errors.New("client gone")
	err := g.Feed([]byte("data: {}\n\ndata: {}\n"), func([]byte) error { return stop })
	assert.ErrorIs(t, err, stop)
}

func TestEngineErrorEventAndKVFailure(t *testing.T) {
	t.Parallel()
	for payload, want := range map[string]string{
		`{"error":{"message":"KVTransferError(bootstrap_room=7): Request 7 timed out after 30s in KVPoll.WaitingForInput"}}`: "KVTransferError(bootstrap_room=7): Request 7 timed out after 30s in KVPoll.WaitingForInput",
		`{"error":"plain"}`: "plain",
	} {
		msg, ok := handoff.EngineErrorEvent([]byte(payload))
		assert.True(t, ok, payload)
		assert.Equal(t, want, msg)
	}
	_, ok := handoff.EngineErrorEvent([]byte(`{"choices":[]}`))
	assert.False(t, ok)
	_, ok = handoff.EngineErrorEvent([]byte(`[DONE]`))
	assert.False(t, ok)

	assert.True(t, handoff.IsKVTransferFailure("KVTransferError(bootstrap_room=1): Request 1 timed out after 300.0s in KVPoll.Bootstrapping"))
	assert.True(t, handoff.IsKVTransferFailure("Request 1 timed out after 300.0s in KVPoll.WaitingForInput"))
	assert.False(t, handoff.IsKVTransferFailure("The input (9 tokens) is longer than the model's context length (8 tokens)."))
}

func FuzzLineGuard(f *testing.F) {
	f.Add([]byte("data: {\"a\":1}\n\ndata: [DONE]\n\n"), 3)
	f.Add([]byte("data: {\"a\":\n"), 1)
	f.Fuzz(func(t *testing.T, b []byte, cut int) {
		// Whatever the split, the guard emits the same bytes and the same verdict.
		var whole, split handoff.LineGuard
		w, werr := feedAll(&whole, string(b))
		if cut < 0 || cut > len(b) {
			cut = len(b) / 2
		}
		s, serr := feedAll(&split, string(b[:cut]), string(b[cut:]))
		if w != s || (werr == nil) != (serr == nil) {
			t.Fatalf("split at %d: %q/%v vs %q/%v", cut, s, serr, w, werr)
		}
	})
}
