package respond_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/domain/respond"
)

// vocab maps ids to fixed bytes; 9 is the first byte of "é" alone (a partial character).
type vocab map[uint32]string

func (v vocab) AppendBytes(dst []byte, ids []uint32, _ bool) []byte {
	for _, id := range ids {
		dst = append(dst, v[id]...)
	}
	return dst
}

var testVocab = vocab{1: "Hi", 2: "!", 3: " there", 9: "\xc3"}

var meta = respond.Meta{ID: "chatcmpl-1", Model: "qwen3", Created: 1700000000}

func u32(v uint32) *uint32 { return &v }
func str(s string) *string { return &s }

func TestChatCompletionBody(t *testing.T) {
	t.Parallel()
	samples := []respond.Sample{
		{Index: 1, Content: "", ToolCalls: []respond.ToolCall{{ID: "call_1", Name: "get_weather", Arguments: `{"city":"Paris"}`}},
			Finish: respond.Finish{Reason: "stop", MatchedTokenID: u32(151645)}, CompletionTokens: 20},
		{Index: 0, Content: "Hi!", Reasoning: "think", Finish: respond.Finish{Reason: "length"}, CompletionTokens: 2,
			Logprobs: []respond.Logprob{{TokenID: 1, Logprob: -0.5, Top: []respond.TopLogprob{{TokenID: 1, Logprob: -0.5}, {TokenID: 3, Logprob: -1}}}, {TokenID: 9, Logprob: -2}}},
	}
	got := respond.ChatCompletion(meta, samples, respond.Usage{PromptTokens: 10, CompletionTokens: 22, CachedTokens: 4}, testVocab)
	assert.JSONEq(t, `{"id":"chatcmpl-1","object":"chat.completion","created":1700000000,"model":"qwen3",
	 "choices":[
	  {"index":0,"message":{"role":"assistant","content":"Hi!","reasoning_content":"think"},
	   "logprobs":{"content":[
	     {"token":"Hi","logprob":-0.5,"bytes":[72,105],"top_logprobs":[{"token":"Hi","logprob":-0.5,"bytes":[72,105]},{"token":" there","logprob":-1,"bytes":[32,116,104,101,114,101]}]},
	     {"token":"\ufffd","logprob":-2,"bytes":[195],"top_logprobs":[]}]},
	   "finish_reason":"length","matched_stop":null},
	  {"index":1,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}]},
	   "logprobs":null,"finish_reason":"tool_calls","matched_stop":151645}],
	 "usage":{"prompt_tokens":10,"completion_tokens":22,"total_tokens":32,"prompt_tokens_details":{"cached_tokens":4}}}`, string(got))
}

// events splits an SSE byte stream into (event name, data) pairs.
func events(t *testing.T, b []byte) [][2]string {
	t.Helper()
	var out [][2]string
	for _, ev := range strings.Split(strings.TrimSuffix(string(b), "\n\n"), "\n\n") {
		var name, data string
		for _, line := range strings.Split(ev, "\n") {
			switch {
			case strings.HasPrefix(line, "event: "):
				name = line[len("event: "):]
			case strings.HasPrefix(line, "data: "):
				data = line[len("data: "):]
			default:
				t.Fatalf("bad SSE line %q", line)
			}
		}
		out = append(out, [2]string{name, data})
	}
	return out
}

func TestChatStreamEvents(t *testing.T) {
	t.Parallel()
	s := respond.NewChatStream(meta, nil)
	var b []byte
	b = append(b, s.Delta(0, respond.Delta{Reasoning: "hm"}, nil)...)
	b = append(b, s.Delta(0, respond.Delta{Content: "Hi"}, nil)...)
	b = append(b, s.Delta(1, respond.Delta{ToolCalls: []respond.ToolCall{{ID: "call_1", Name: "f", Arguments: "{}"}}}, nil)...)
	b = append(b, s.Delta(1, respond.Delta{ToolCalls: []respond.ToolCall{{ID: "call_2", Name: "g", Arguments: `{"a":1}`}}}, nil)...)
	b = append(b, s.Finish(0, respond.Finish{Reason: "stop", MatchedStop: str("</answer>")})...)
	b = append(b, s.Finish(1, respond.Finish{Reason: "stop"})...)
	b = append(b, s.Usage(respond.Usage{PromptTokens: 5, CompletionTokens: 7})...)
	b = append(b, respond.DoneEvent...)
	head := `"id":"chatcmpl-1","object":"chat.completion.chunk","created":1700000000,"model":"qwen3"`
	want := []string{
		`{` + head + `,"choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]}`,
		`{` + head + `,"choices":[{"index":0,"delta":{"reasoning_content":"hm"},"logprobs":null,"finish_reason":null}]}`,
		`{` + head + `,"choices":[{"index":0,"delta":{"content":"Hi"},"logprobs":null,"finish_reason":null}]}`,
		`{` + head + `,"choices":[{"index":1,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]}`,
		`{` + head + `,"choices":[{"index":1,"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"f","arguments":"{}"}}]},"logprobs":null,"finish_reason":null}]}`,
		`{` + head + `,"choices":[{"index":1,"delta":{"tool_calls":[{"index":1,"id":"call_2","type":"function","function":{"name":"g","arguments":"{\"a\":1}"}}]},"logprobs":null,"finish_reason":null}]}`,
		`{` + head + `,"choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"stop","matched_stop":"</answer>"}]}`,
		`{` + head + `,"choices":[{"index":1,"delta":{},"logprobs":null,"finish_reason":"tool_calls"}]}`,
		`{` + head + `,"choices":[],"usage":{"prompt_tokens":5,"completion_tokens":7,"total_tokens":12,"prompt_tokens_details":{"cached_tokens":0}}}`,
	}
	evs := events(t, b)
	require.Len(t, evs, len(want)+1)
	for i, w := range want {
		assert.Equal(t, "", evs[i][0])
		assert.JSONEq(t, w, evs[i][1], "event %d", i)
	}
	assert.Equal(t, "[DONE]", evs[len(want)][1])
}

func TestCompletionAndGenerateBodies(t *testing.T) {
	t.Parallel()
	samples := []respond.Sample{{Index: 0, Text: "Hi!", OutputIDs: []uint32{1, 2}, CompletionTokens: 2,
		Finish: respond.Finish{Reason: "stop", MatchedStop: str("\n\n")}, Logprobs: []respond.Logprob{{TokenID: 1, Logprob: -0.1}, {TokenID: 2, Logprob: -0.2}}}}
	u := respond.Usage{PromptTokens: 3, CompletionTokens: 2, CachedTokens: 1}
	assert.JSONEq(t, `{"id":"cmpl-1","object":"text_completion","created":1700000000,"model":"qwen3",
	 "choices":[{"index":0,"text":"Q: Hi!","logprobs":{"tokens":["Hi","!"],"token_logprobs":[-0.1,-0.2],"top_logprobs":[{},{}],"text_offset":[3,5]},
	  "finish_reason":"stop","matched_stop":"\n\n"}],
	 "usage":{"prompt_tokens":3,"completion_tokens":2,"total_tokens":5,"prompt_tokens_details":{"cached_tokens":1}}}`,
		string(respond.Completion(respond.Meta{ID: "cmpl-1", Model: "qwen3", Created: 1700000000}, samples, u, testVocab, "Q: ")))
	assert.JSONEq(t, `{"text":"Hi!","output_ids":[1,2],"meta_info":{"id":"rid-1","finish_reason":{"type":"stop","matched":"\n\n"},
	  "prompt_tokens":3,"completion_tokens":2,"cached_tokens":1,"matched_stop":"\n\n","output_token_logprobs":[[-0.1,1,"Hi"],[-0.2,2,"!"]]}}`,
		string(respond.Generate("rid-1", samples, u, testVocab)))

	two := []respond.Sample{{Index: 1, Text: "b", CompletionTokens: 5, Finish: respond.Finish{Reason: "length"}}, {Index: 0, Text: "a", CompletionTokens: 1, Finish: respond.Finish{Reason: "stop", MatchedTokenID: u32(7)}}}
	var arr []map[string]any
	require.NoError(t, json.Unmarshal(respond.Generate("rid", two, u, nil), &arr))
	require.Len(t, arr, 2)
	assert.Equal(t, "a", arr[0]["text"])
	assert.Equal(t, map[string]any{"type": "length", "length": float64(5)}, arr[1]["meta_info"].(map[string]any)["finish_reason"])
	assert.Equal(t, "rid-1", arr[1]["meta_info"].(map[string]any)["id"])
}

func TestGenerateStreamIsCumulative(t *testing.T) {
	t.Parallel()
	g := respond.NewGenerateStream("rid", 1, respond.Usage{PromptTokens: 3})
	b := append(g.Delta(0, "Hi", []uint32{1}), g.Delta(0, "!", []uint32{2})...)
	b = append(b, g.Finish(0, respond.Finish{Reason: "length"})...)
	evs := events(t, b)
	require.Len(t, evs, 3)
	assert.JSONEq(t, `{"text":"Hi","output_ids":[1],"meta_info":{"id":"rid","finish_reason":null,"prompt_tokens":3,"completion_tokens":1,"cached_tokens":0}}`, evs[0][1])
	assert.JSONEq(t, `{"text":"Hi!","output_ids":[1,2],"meta_info":{"id":"rid","finish_reason":{"type":"length","length":2},"prompt_tokens":3,"completion_tokens":2,"cached_tokens":0}}`, evs[2][1])
}

func TestMessagesBodyAndStream(t *testing.T) {
	t.Parallel()
	m := respond.Meta{ID: "msg_1", Model: "qwen3"}
	s := respond.Sample{Reasoning: "plan", Content: "Calling.", ToolCalls: []respond.ToolCall{{ID: "toolu_1", Name: "get_weather", Arguments: `{"city":"Oslo"}`}},
		Finish: respond.Finish{Reason: "stop"}}
	assert.JSONEq(t, `{"id":"msg_1","type":"message","role":"assistant","model":"qwen3",
	 "content":[{"type":"thinking","thinking":"plan","signature":""},{"type":"text","text":"Calling."},
	  {"type":"tool_use","id":"toolu_1","name":"get_weather","input":{"city":"Oslo"}}],
	 "stop_reason":"tool_use","stop_sequence":null,"usage":{"input_tokens":9,"output_tokens":4,"cache_read_input_tokens":2}}`,
		string(respond.Message(m, s, respond.Usage{PromptTokens: 9, CompletionTokens: 4, CachedTokens: 2})))
	assert.JSONEq(t, `{"input_tokens":42}`, string(respond.CountTokens(42)))
	plain := respond.Message(m, respond.Sample{Content: "x", Finish: respond.Finish{Reason: "stop", MatchedStop: str("END")}}, respond.Usage{})
	assert.Contains(t, string(plain), `"stop_reason":"stop_sequence","stop_sequence":"END"`)

	st := respond.NewMessageStream(m)
	b := st.Start(9, 2)
	b = append(b, st.Delta(respond.Delta{Reasoning: "pl"})...)
	b = append(b, st.Delta(respond.Delta{Reasoning: "an", Content: "Hi"})...)
	b = append(b, st.Delta(respond.Delta{ToolCalls: []respond.ToolCall{{ID: "toolu_1", Name: "f", Arguments: `{"a":1}`}}})...)
	b = append(b, st.Finish(respond.Finish{Reason: "stop"}, 4)...)
	var names []string
	for _, ev := range events(t, b) {
		names = append(names, ev[0])
		var obj map[string]any
		require.NoError(t, json.Unmarshal([]byte(ev[1]), &obj))
		assert.Equal(t, ev[0], obj["type"], "the data's type names the event")
	}
	assert.Equal(t, []string{"message_start",
		"content_block_start", "content_block_delta", "content_block_delta", "content_block_stop",
		"content_block_start", "content_block_delta", "content_block_stop",
		"content_block_start", "content_block_delta", "content_block_stop",
		"message_delta", "message_stop"}, names)
	evs := events(t, b)
	assert.JSONEq(t, `{"type":"content_block_start","index":2,"content_block":{"type":"tool_use","id":"toolu_1","name":"f","input":{}}}`, evs[8][1])
	assert.JSONEq(t, `{"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"{\"a\":1}"}}`, evs[9][1])
	assert.JSONEq(t, `{"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":4}}`, evs[11][1])
}

func TestResponsesBodyAndStream(t *testing.T) {
	t.Parallel()
	m := respond.Meta{ID: "resp_1", Model: "qwen3", Created: 1700000000}
	s := respond.Sample{Reasoning: "r", Content: "Done.", ToolCalls: []respond.ToolCall{{ID: "call_1", Name: "f", Arguments: "{}"}}, Finish: respond.Finish{Reason: "length"}}
	assert.JSONEq(t, `{"id":"resp_1","object":"response","created_at":1700000000,"status":"incomplete","model":"qwen3",
	 "output":[{"type":"reasoning","id":"rs_resp_1_0","summary":[],"content":[{"type":"reasoning_text","text":"r"}]},
	  {"type":"message","id":"msg_resp_1_1","status":"incomplete","role":"assistant","content":[{"type":"output_text","text":"Done.","annotations":[]}]},
	  {"type":"function_call","id":"fc_resp_1_2","status":"completed","call_id":"call_1","name":"f","arguments":"{}"}],
	 "incomplete_details":{"reason":"max_output_tokens"},
	 "usage":{"input_tokens":3,"input_tokens_details":{"cached_tokens":0},"output_tokens":2,"output_tokens_details":{"reasoning_tokens":1},"total_tokens":5}}`,
		string(respond.Response(m, s, respond.Usage{PromptTokens: 3, CompletionTokens: 2, ReasoningTokens: 1})))

	st := respond.NewResponseStream(m)
	b := st.Start()
	b = append(b, st.Delta(respond.Delta{Content: "Do"})...)
	b = append(b, st.Delta(respond.Delta{Content: "ne."})...)
	b = append(b, st.Finish(respond.Finish{Reason: "stop"}, respond.Usage{PromptTokens: 3, CompletionTokens: 2})...)
	var names []string
	evs := events(t, b)
	for i, ev := range evs {
		names = append(names, ev[0])
		var obj map[string]any
		require.NoError(t, json.Unmarshal([]byte(ev[1]), &obj))
		assert.Equal(t, float64(i), obj["sequence_number"])
	}
	assert.Equal(t, []string{"response.created", "response.in_progress", "response.output_item.added", "response.content_part.added",
		"response.output_text.delta", "response.output_text.delta", "response.output_text.done", "response.content_part.done",
		"response.output_item.done", "response.completed"}, names)
	var done struct {
		Response struct {
			Status string `json:"status"`
			Output []struct {
				Content []struct{ Text string } `json:"content"`
			} `json:"output"`
		} `json:"response"`
	}
	require.NoError(t, json.Unmarshal([]byte(evs[len(evs)-1][1]), &done))
	assert.Equal(t, "completed", done.Response.Status)
	assert.Equal(t, "Done.", done.Response.Output[0].Content[0].Text)
}
