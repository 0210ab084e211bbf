package handoff_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/smg-go/smg/domain/handoff"
)

func TestPrefillUsage(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		route handoff.Route
		v     string
		want  handoff.PromptUsage
		ok    bool
	}{
		{"chat body", handoff.RouteChat, `{"usage":{"prompt_tokens":12,"completion_tokens":1,"total_tokens":13,"prompt_tokens_details":{"cached_tokens":8}}}`,
			handoff.PromptUsage{Prompt: 12, Cached: 8, HasCached: true}, true},
		{"chat without details", handoff.RouteChat, `{"usage":{"prompt_tokens":12,"completion_tokens":1,"prompt_tokens_details":null}}`,
			handoff.PromptUsage{Prompt: 12}, true},
		{"generate meta_info", handoff.RouteGenerate, `{"text":"a","meta_info":{"prompt_tokens":5,"cached_tokens":0}}`,
			handoff.PromptUsage{Prompt: 5, Cached: 0, HasCached: true}, true},
		{"messages stream start", handoff.RouteMessages, `{"type":"message_start","message":{"usage":{"input_tokens":9,"cache_read_input_tokens":4}}}`,
			handoff.PromptUsage{Prompt: 9, Cached: 4, HasCached: true}, true},
		{"responses completed", handoff.RouteResponses, `{"type":"response.completed","response":{"usage":{"input_tokens":9,"output_tokens":2,"input_tokens_details":{"cached_tokens":3}}}}`,
			handoff.PromptUsage{Prompt: 9, Cached: 3, HasCached: true}, true},
		{"a chunk without usage", handoff.RouteChat, `{"choices":[{"delta":{"content":"x"}}]}`, handoff.PromptUsage{}, false},
		{"not json", handoff.RouteChat, `{"usage":`, handoff.PromptUsage{}, false},
	}
	for _, c := range cases {
		got, ok := handoff.PrefillUsage(c.route, []byte(c.v))
		assert.Equal(t, c.ok, ok, c.name)
		assert.Equal(t, c.want, got, c.name)
	}
}

func TestRewriteUsage(t *testing.T) {
	t.Parallel()
	cold := handoff.PromptUsage{Prompt: 12, Cached: 0, HasCached: true}
	cases := []struct {
		name    string
		route   handoff.Route
		in      string
		u       handoff.PromptUsage
		want    string
		changed bool
	}{
		{"chat: cached and total from the prefill, key order kept", handoff.RouteChat,
			`{"id":"x","usage":{"prompt_tokens":12,"completion_tokens":4,"total_tokens":16,"prompt_tokens_details":{"cached_tokens":12}},"z":1}`, cold,
			`{"id":"x","usage":{"prompt_tokens":12,"completion_tokens":4,"total_tokens":16,"prompt_tokens_details":{"cached_tokens":0}},"z":1}`, true},
		{"chat: a null details object is filled", handoff.RouteChat,
			`{"usage":{"prompt_tokens":12,"completion_tokens":4,"total_tokens":16,"prompt_tokens_details":null}}`, handoff.PromptUsage{Prompt: 12, Cached: 8, HasCached: true},
			`{"usage":{"prompt_tokens":12,"completion_tokens":4,"total_tokens":16,"prompt_tokens_details":{"cached_tokens":8}}}`, true},
		{"chat: the prefill's prompt count wins and the total follows", handoff.RouteChat,
			`{"usage":{"prompt_tokens":13,"completion_tokens":4,"total_tokens":17}}`, handoff.PromptUsage{Prompt: 12},
			`{"usage":{"prompt_tokens":12,"completion_tokens":4,"total_tokens":16}}`, true},
		{"generate", handoff.RouteGenerate,
			`{"text":"a","meta_info":{"id":"r","prompt_tokens":12,"completion_tokens":4,"cached_tokens":12}}`, cold,
			`{"text":"a","meta_info":{"id":"r","prompt_tokens":12,"completion_tokens":4,"cached_tokens":0}}`, true},
		{"messages stream start", handoff.RouteMessages,
			`{"type":"message_start","message":{"id":"m","usage":{"input_tokens":12,"output_tokens":1,"cache_read_input_tokens":12}}}`, cold,
			`{"type":"message_start","message":{"id":"m","usage":{"input_tokens":12,"output_tokens":1,"cache_read_input_tokens":0}}}`, true},
		{"responses", handoff.RouteResponses,
			`{"usage":{"input_tokens":12,"output_tokens":4,"total_tokens":16,"input_tokens_details":{"cached_tokens":12}}}`, cold,
			`{"usage":{"input_tokens":12,"output_tokens":4,"total_tokens":16,"input_tokens_details":{"cached_tokens":0}}}`, true},
		{"a chunk without usage is untouched", handoff.RouteChat, `{"choices":[]}`, cold, `{"choices":[]}`, false},
		{"null usage is untouched", handoff.RouteChat, `{"choices":[],"usage":null}`, cold, `{"choices":[],"usage":null}`, false},
	}
	for _, c := range cases {
		got, changed := handoff.RewriteUsage(c.route, []byte(c.in), c.u)
		assert.Equal(t, c.changed, changed, c.name)
		assert.Equal(t, c.want, string(got), c.name)
	}
}

func TestRewriteDataLines(t *testing.T) {
	t.Parallel()
	span := []byte("data: {\"a\":1}\n\n: c\ndata: {\"usage\":{\"prompt_tokens\":3,\"prompt_tokens_details\":{\"cached_tokens\":3}}}\r\n\r\ndata: [DONE]\n\n")
	got := handoff.RewriteDataLines(span, func(p []byte) ([]byte, bool) {
		return handoff.RewriteUsage(handoff.RouteChat, p, handoff.PromptUsage{Prompt: 3, HasCached: true})
	})
	assert.Equal(t, "data: {\"a\":1}\n\n: c\ndata: {\"usage\":{\"prompt_tokens\":3,\"prompt_tokens_details\":{\"cached_tokens\":0}}}\r\n\r\ndata: [DONE]\n\n", string(got))
	same := []byte("data: {\"a\":1}\n\n")
	assert.Equal(t, &same[0], &handoff.RewriteDataLines(same, func([]byte) ([]byte, bool) { return nil, false })[0], "unchanged spans are not copied")
	var seen []string
	handoff.EachDataLine(span, func(p []byte) { seen = append(seen, string(p)) })
	assert.Len(t, seen, 3)
	assert.True(t, handoff.NeedsPrefillUsage(handoff.RouteChat, []byte(`{"usage":{"prompt_tokens":3,"prompt_tokens_details":null}}`)))
	assert.False(t, handoff.NeedsPrefillUsage(handoff.RouteChat, []byte(`{"usage":{"prompt_tokens":3}}`)), "no cached count to fix")
	assert.False(t, handoff.NeedsPrefillUsage(handoff.RouteMessages, []byte(`{"type":"message_start","message":{"usage":{"input_tokens":3}}}`)))
}
