package respond_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/domain/respond"
	"github.com/smg-go/smg/domain/text"
	"github.com/smg-go/smg/domain/text/texttest"
)

// A Qwen3 answer with thinking, a tool call and a stop string, streamed as engine chunks of
// three ids, ends as the same Sample a single-shot parse gives, and the streamed deltas add up
// to it.
func TestSampleStateFromEngineTokens(t *testing.T) {
	t.Parallel()
	tok := texttest.Tokenizer(t, texttest.Qwen3)
	out := "<think>\nNeed the weather.\n</think>\n\nChecking.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>###tail"
	ids := append(tok.Encode(out, false), 151645)
	rp, err := respond.NewReasoningParser("qwen3")
	require.NoError(t, err)
	tp, err := respond.NewToolParser("qwen", seqIDs())
	require.NoError(t, err)
	s := respond.NewSampleState(0, text.NewDecoder(tok, text.DecoderOptions{SkipSpecialTokens: true, Stop: []string{"###"}}), respond.NewOutputParser(rp, tp))
	var streamed respond.Delta
	var raw string
	stopped := false
	for i := 0; i < len(ids) && !stopped; i += 3 {
		d, r, st := s.Step(ids[i:min(i+3, len(ids))], nil)
		streamed.Reasoning += d.Reasoning
		streamed.Content += d.Content
		streamed.ToolCalls = append(streamed.ToolCalls, d.ToolCalls...)
		raw += r
		stopped = st
	}
	require.True(t, stopped, "the stop string ended the sample before the engine did")
	d, r, sample := s.Finish(respond.Finish{Reason: "length"})
	streamed.Reasoning += d.Reasoning
	streamed.Content += d.Content
	streamed.ToolCalls = append(streamed.ToolCalls, d.ToolCalls...)
	raw += r

	assert.Equal(t, "\nNeed the weather.\n", sample.Reasoning)
	assert.Equal(t, "\n\nChecking.\n", sample.Content)
	assert.Equal(t, []respond.ToolCall{{ID: "call_1", Name: "get_weather", Arguments: `{"city":"Paris"}`}}, sample.ToolCalls)
	assert.Equal(t, out[:len(out)-len("###tail")], sample.Text)
	assert.Equal(t, sample.Text, raw)
	assert.Equal(t, respond.Delta{Reasoning: sample.Reasoning, Content: sample.Content, ToolCalls: sample.ToolCalls}, streamed)
	require.NotNil(t, sample.Finish.MatchedStop)
	assert.Equal(t, "###", *sample.Finish.MatchedStop)
	assert.Equal(t, "stop", sample.Finish.Reason, "a gateway stop overrides the engine's length")
	assert.Equal(t, len(sample.OutputIDs), sample.CompletionTokens)
	assert.Less(t, sample.CompletionTokens, len(ids), "ids after the stop are not counted")

	body := respond.ChatCompletion(meta, []respond.Sample{sample}, respond.Usage{PromptTokens: 1, CompletionTokens: sample.CompletionTokens}, nil)
	assert.Contains(t, string(body), `"finish_reason":"tool_calls"`)
	assert.Contains(t, string(body), `"matched_stop":"###"`)
}

// Tokens counts the ids Step consumed: all of a chunk, or up to a stop id inside it.
func TestSampleStateTokensStopsAtTheStop(t *testing.T) {
	t.Parallel()
	tok := texttest.Tokenizer(t, texttest.Qwen3)
	ids := tok.Encode("one two three four", false)
	require.GreaterOrEqual(t, len(ids), 4)
	s := respond.NewSampleState(0, text.NewDecoder(tok, text.DecoderOptions{StopTokenIDs: []uint32{ids[2]}}), nil)
	_, _, stopped := s.Step(ids[:2], nil)
	require.False(t, stopped)
	assert.Equal(t, 2, s.Tokens())
	_, _, stopped = s.Step(ids[2:], nil)
	require.True(t, stopped)
	assert.Equal(t, 3, s.Tokens(), "the stop id is consumed, the ids after it are not")
}
