package respond_test

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/domain/respond"
)

func seqIDs() func() string {
	n := 0
	return func() string { n++; return fmt.Sprintf("call_%d", n) }
}

// run feeds text in random chunks and merges every delta; each case must give the same result
// for every chunking.
func run(t *testing.T, reasoning, tools, text string, rng *rand.Rand) respond.Delta {
	t.Helper()
	var rp *respond.ReasoningParser
	var tp respond.ToolParser
	var err error
	if reasoning != "" {
		rp, err = respond.NewReasoningParser(reasoning)
		require.NoError(t, err)
	}
	if tools != "" {
		tp, err = respond.NewToolParser(tools, seqIDs())
		require.NoError(t, err)
	}
	o := respond.NewOutputParser(rp, tp)
	var all respond.Delta
	merge := func(d respond.Delta) {
		all.Reasoning += d.Reasoning
		all.Content += d.Content
		all.ToolCalls = append(all.ToolCalls, d.ToolCalls...)
	}
	for rest := text; rest != ""; {
		n := 1 + rng.IntN(len(rest))
		for !utf8.ValidString(rest[:n]) {
			n++
		}
		merge(o.Push(rest[:n]))
		rest = rest[n:]
	}
	merge(o.Flush())
	return all
}

func TestParsersSplitReasoningContentAndToolCalls(t *testing.T) {
	t.Parallel()
	call := func(id, name, args string) respond.ToolCall {
		return respond.ToolCall{ID: id, Name: name, Arguments: args}
	}
	cases := []struct {
		name, reasoning, tools, text string
		want                         respond.Delta
	}{
		{"qwen3 think then answer", "qwen3", "qwen", "<think>\nLet me see.\n</think>\n\nParis.",
			respond.Delta{Reasoning: "\nLet me see.\n", Content: "\n\nParis."}},
		{"qwen3 without think is all content", "qwen3", "qwen", "Just text <b>bold</b>.",
			respond.Delta{Content: "Just text <b>bold</b>."}},
		{"qwen3 unterminated think stays reasoning", "qwen3", "", "<think>still thinking",
			respond.Delta{Reasoning: "still thinking"}},
		{"thinking model starts in reasoning", "qwen3-thinking", "", "plan it</think>done",
			respond.Delta{Reasoning: "plan it", Content: "done"}},
		{"deepseek-r1 tolerates a repeated start tag", "deepseek-r1", "", "<think>plan</think>ok",
			respond.Delta{Reasoning: "plan", Content: "ok"}},
		{"qwen tool call after thinking", "qwen3", "qwen",
			"<think>need weather</think>\n\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>",
			respond.Delta{Reasoning: "need weather", Content: "\n\n", ToolCalls: []respond.ToolCall{call("call_1", "get_weather", `{"city":"Paris"}`)}}},
		{"qwen parallel calls drop the whitespace between them", "", "qwen",
			"Checking.\n<tool_call>\n{\"name\": \"a\", \"arguments\": {}}\n</tool_call>\n<tool_call>\n{\"name\": \"b\", \"arguments\": {\"x\": [1, 2]}}\n</tool_call>\n",
			respond.Delta{Content: "Checking.\n", ToolCalls: []respond.ToolCall{call("call_1", "a", `{}`), call("call_2", "b", `{"x":[1,2]}`)}}},
		{"qwen invalid json stays text", "", "qwen", "<tool_call>not json</tool_call>",
			respond.Delta{Content: "<tool_call>not json</tool_call>"}},
		{"qwen call cut by max_tokens is parsed if complete json", "", "qwen", "<tool_call>{\"name\": \"a\", \"arguments\": {\"k\": 1}}",
			respond.Delta{ToolCalls: []respond.ToolCall{call("call_1", "a", `{"k":1}`)}}},
		{"qwen truncated call is text", "", "qwen", "<tool_call>{\"name\": \"a\", \"argu",
			respond.Delta{Content: "<tool_call>{\"name\": \"a\", \"argu"}},
		{"llama json call", "", "llama", "{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Rome\"}}",
			respond.Delta{ToolCalls: []respond.ToolCall{call("call_1", "get_weather", `{"city":"Rome"}`)}}},
		{"llama python tag and two calls", "", "llama", "<|python_tag|>{\"name\": \"a\", \"parameters\": {}}; {\"name\": \"b\", \"arguments\": \"{\\\"q\\\": 1}\"}",
			respond.Delta{ToolCalls: []respond.ToolCall{call("call_1", "a", `{}`), call("call_2", "b", `{"q":1}`)}}},
		{"llama plain text passes", "", "llama", "The weather is {unknown}.",
			respond.Delta{Content: "The weather is {unknown}."}},
		{"llama broken json is text", "", "llama", "{\"name\": \"a\", \"parameters\": {",
			respond.Delta{Content: "{\"name\": \"a\", \"parameters\": {"}},
		{"no parsers", "", "", "<think>x</think><tool_call>{}</tool_call>",
			respond.Delta{Content: "<think>x</think><tool_call>{}</tool_call>"}},
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for _, c := range cases {
		for k := 0; k < 30; k++ {
			got := run(t, c.reasoning, c.tools, c.text, rng)
			require.Equal(t, c.want, got, c.name)
		}
	}
}

func TestUnknownParserNamesAreRejected(t *testing.T) {
	t.Parallel()
	_, err := respond.NewToolParser("hermes9", nil)
	assert.ErrorContains(t, err, "llama")
	_, err = respond.NewReasoningParser("nope")
	assert.ErrorContains(t, err, "qwen3")
	tp, err := respond.NewToolParser("qwen", nil)
	require.NoError(t, err)
	_, calls := tp.Push("<tool_call>{\"name\": \"a\", \"arguments\": {}}</tool_call>")
	require.Len(t, calls, 1)
	assert.True(t, strings.HasPrefix(calls[0].ID, "call_") && len(calls[0].ID) == 29, calls[0].ID)
}

func TestParsersForModelFamily(t *testing.T) {
	t.Parallel()
	cases := map[string][2]string{
		"Qwen/Qwen3-8B":                           {"qwen", "qwen3"},
		"Qwen/Qwen3-30B-A3B-Thinking-2507":        {"qwen", "qwen3-thinking"},
		"Qwen/Qwen2.5-7B-Instruct":                {"qwen", ""},
		"meta-llama/Llama-3.1-8B-Instruct":        {"llama", ""},
		"deepseek-ai/DeepSeek-R1-Distill-Qwen-7B": {"", "deepseek-r1"},
		"mistralai/Mistral-7B":                    {"", ""},
	}
	for model, want := range cases {
		tool, reasoning := respond.ParsersForModel(model)
		assert.Equal(t, want, [2]string{tool, reasoning}, model)
	}
}
