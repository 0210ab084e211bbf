package handoff_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/domain/errs"
	"github.com/smg-go/smg/domain/handoff"
)

func TestRouteFor(t *testing.T) {
	t.Parallel()
	cases := map[string]handoff.Route{
		"/generate": handoff.RouteGenerate, "/v1/chat/completions": handoff.RouteChat,
		"/v1/completions": handoff.RouteCompletions, "/v1/messages": handoff.RouteMessages,
		"/v1/responses": handoff.RouteResponses, "/v1/rerank": handoff.RouteRerank, "/rerank": handoff.RouteRerank,
	}
	for path, want := range cases {
		got, ok := handoff.RouteFor(path)
		assert.True(t, ok, path)
		assert.Equal(t, want, got, path)
	}
	for _, path := range []string{"/v1/messages/count_tokens", "/v1/embeddings", ""} {
		_, ok := handoff.RouteFor(path)
		assert.False(t, ok, path)
	}
	assert.Equal(t, "/v1/rerank", handoff.RouteRerank.Path(), "legacy /rerank is sent as /v1/rerank")
	assert.Equal(t, "unknown", handoff.RouteUnknown.String())
}

func TestInspect(t *testing.T) {
	t.Parallel()
	type want struct {
		stream, logprobs bool
		batch, n         int
		model            string
		hasMCT           bool
		requestID        string
	}
	cases := []struct {
		name  string
		route handoff.Route
		body  string
		want  want
	}{
		{"chat defaults", handoff.RouteChat, `{"model":"m","messages":[]}`, want{n: 1, model: "m"}},
		{"chat stream logprobs n", handoff.RouteChat, `{"model":"m","stream":true,"logprobs":true,"n":3,"max_completion_tokens":9}`,
			want{stream: true, logprobs: true, n: 3, model: "m", hasMCT: true}},
		{"chat logprobs false, null n, null mct", handoff.RouteChat, `{"logprobs":false,"n":null,"max_completion_tokens":null}`, want{n: 1}},
		{"chat n>1 is not a batch", handoff.RouteChat, `{"n":2}`, want{n: 2}},
		{"completions string prompt", handoff.RouteCompletions, `{"prompt":"hi","logprobs":0}`, want{n: 1, logprobs: true}},
		{"completions logprobs null", handoff.RouteCompletions, `{"prompt":"hi","logprobs":null}`, want{n: 1}},
		{"completions prompt array is a batch", handoff.RouteCompletions, `{"prompt":["a","b","c"]}`, want{n: 1, batch: 3}},
		{"completions token ids are one prompt", handoff.RouteCompletions, `{"prompt":[1,2,3]}`, want{n: 1}},
		{"completions token id lists are a batch", handoff.RouteCompletions, `{"prompt":[[1,2],[3]]}`, want{n: 1, batch: 2}},
		{"completions one-element batch", handoff.RouteCompletions, `{"prompt":["a"]}`, want{n: 1, batch: 1}},
		{"completions empty array", handoff.RouteCompletions, `{"prompt":[]}`, want{n: 1}},
		{"generate text", handoff.RouteGenerate, `{"text":"hi","return_logprob":true,"stream":false}`, want{n: 1, logprobs: true}},
		{"generate text list", handoff.RouteGenerate, `{"text":["a","b"]}`, want{n: 1, batch: 2}},
		{"generate input_ids batch", handoff.RouteGenerate, `{"input_ids":[[1],[2],[3]]}`, want{n: 1, batch: 3}},
		{"generate input_ids single", handoff.RouteGenerate, `{"input_ids":[1,2,3]}`, want{n: 1}},
		{"generate sampling n", handoff.RouteGenerate, `{"text":"hi","sampling_params":{"n":4},"n":9}`, want{n: 4}},
		{"generate return_logprob list", handoff.RouteGenerate, `{"text":["a","b"],"return_logprob":[false,true]}`, want{n: 1, batch: 2, logprobs: true}},
		{"messages ignores n and logprobs", handoff.RouteMessages, `{"model":"m","n":3,"logprobs":true,"stream":true}`, want{n: 1, model: "m", stream: true}},
		{"responses", handoff.RouteResponses, `{"input":"hi","request_id":"r-1"}`, want{n: 1, requestID: "r-1"}},
		{"rerank", handoff.RouteRerank, `{"query":"q","documents":["a"],"model":"r"}`, want{n: 1, model: "r"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r, err := handoff.Inspect(tc.route, []byte(tc.body))
			require.NoError(t, err)
			got := want{r.Stream, r.Logprobs, r.Batch, r.N, r.Model, r.HasMaxCompletionTokens, r.RequestID}
			assert.Equal(t, tc.want, got)
			assert.Equal(t, tc.body, string(r.Body.Bytes()))
			assert.Equal(t, tc.route, r.Route)
		})
	}
}

func TestInspectRejectsBadBodies(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, body, code, msg string
	}{
		{"invalid JSON", `{"model":`, "json_parse_error", "failed to parse request body: invalid JSON at byte 9"},
		{"array body", `[{"model":"m"}]`, "invalid_request", "request body must be a JSON object"},
		{"stream not bool", `{"stream":"yes"}`, "invalid_request", `"stream" must be a boolean, got string`},
		{"model not a string", `{"model":5}`, "invalid_request", `"model" must be a string, got number`},
		{"n zero", `{"n":0}`, "invalid_request", `"n" must be an integer >= 1, got 0`},
		{"n fraction", `{"n":1.5}`, "invalid_request", `"n" must be an integer >= 1, got 1.5`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := handoff.Inspect(handoff.RouteChat, []byte(tc.body))
			e, ok := errs.As(err)
			require.True(t, ok, "%v", err)
			assert.Equal(t, 400, e.Status)
			assert.Equal(t, tc.code, e.Code)
			assert.Contains(t, e.Message, tc.msg)
		})
	}
	_, err := handoff.Inspect(handoff.RouteGenerate, []byte(`{"sampling_params":{"n":-1}}`))
	e, ok := errs.As(err)
	require.True(t, ok)
	assert.Contains(t, e.Message, `"sampling_params.n" must be an integer >= 1`)
}

func TestRoutingText(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		route handoff.Route
		body  string
		want  string
	}{
		{"generate text", handoff.RouteGenerate, `{"text":"hello"}`, "hello"},
		{"generate text list", handoff.RouteGenerate, `{"text":["first","second"]}`, "first"},
		{"generate ids only", handoff.RouteGenerate, `{"input_ids":[1,2]}`, ""},
		{"completions prompt", handoff.RouteCompletions, `{"prompt":"once upon"}`, "once upon"},
		{"completions first element", handoff.RouteCompletions, `{"prompt":["a b","c"]}`, "a b"},
		{"completions token ids", handoff.RouteCompletions, `{"prompt":[1,2]}`, ""},
		{"chat contents joined", handoff.RouteChat,
			`{"messages":[{"role":"system","content":"sys"},{"role":"user","content":[{"type":"text","text":"look"},{"type":"image_url","image_url":{"url":"x"}},{"type":"text","text":"here"}]},{"role":"assistant","content":"","reasoning_content":"think"},{"role":"tool","content":"r\u00e9sult"}]}`,
			"sys look here think résult"},
		{"chat no messages", handoff.RouteChat, `{"model":"m"}`, ""},
		{"messages system and blocks", handoff.RouteMessages,
			`{"system":[{"type":"text","text":"be nice"}],"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":[{"type":"text","text":"yo"}]}]}`,
			"be nice hi yo"},
		{"responses string", handoff.RouteResponses, `{"input":"tell me"}`, "tell me"},
		{"responses items", handoff.RouteResponses,
			`{"input":[{"role":"user","content":[{"type":"input_text","text":"a"},{"type":"input_image","image_url":"u"}]},{"role":"user","content":"b"},"c"]}`, "a b c"},
		{"rerank query", handoff.RouteRerank, `{"query":"what","documents":["x"]}`, "what"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r, err := handoff.Inspect(tc.route, []byte(tc.body))
			require.NoError(t, err)
			assert.Equal(t, tc.want, r.RoutingText())
		})
	}
}

func TestPromptTokens(t *testing.T) {
	t.Parallel()
	cases := []struct {
		route handoff.Route
		body  string
		want  int
	}{
		{handoff.RouteGenerate, `{"input_ids":[1,2,3]}`, 3},
		{handoff.RouteGenerate, `{"input_ids":[[1,2],[3]]}`, 2},
		{handoff.RouteGenerate, `{"text":"hi"}`, 0},
		{handoff.RouteCompletions, `{"prompt":[5,6]}`, 2},
		{handoff.RouteCompletions, `{"prompt":"hi"}`, 0},
		{handoff.RouteChat, `{"prompt":[5,6]}`, 0},
	}
	for _, tc := range cases {
		r, err := handoff.Inspect(tc.route, []byte(tc.body))
		require.NoError(t, err)
		assert.Equal(t, tc.want, r.PromptTokens(), tc.body)
	}
}
