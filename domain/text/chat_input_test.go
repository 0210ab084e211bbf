package text_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/domain/text"
	"github.com/smg-go/smg/domain/text/texttest"
)

func golden(t *testing.T, template, request string) string {
	var goldens []templateGolden
	readJSON(t, "golden_templates.json", &goldens)
	for _, g := range goldens {
		if g.Template == template && g.Request == request && g.Rendered != nil {
			return *g.Rendered
		}
	}
	t.Fatalf("no golden %s/%s", template, request)
	return ""
}

const weatherSchema = `{"type":"object","properties":{"city":{"type":"string","description":"City name"},"unit":{"type":"string","enum":["celsius","fahrenheit"]}},"required":["city"]}`

// The same conversation sent through the Messages and Responses APIs renders the same Qwen3
// prompt as the OpenAI chat request (golden from Jinja2), so count_tokens counts what the
// engine would see.
func TestAnthropicAndResponsesRequestsRenderLikeChat(t *testing.T) {
	t.Parallel()
	ct := chatTemplates(t)[texttest.Qwen3]
	want := golden(t, texttest.Qwen3, "tool_call_and_result")

	anthropic := `{"model":"qwen3","max_tokens":64,
	 "tools":[{"name":"get_weather","description":"Get the current weather in a city","input_schema":` + weatherSchema + `}],
	 "messages":[
	  {"role":"user","content":"Weather in Paris?"},
	  {"role":"assistant","content":[{"type":"tool_use","id":"call_1","name":"get_weather","input":{"city":"Paris","unit":"celsius"}}]},
	  {"role":"user","content":[{"type":"tool_result","tool_use_id":"call_1","content":[{"type":"text","text":"{\"temp\": 21, \"sky\": \"clear\"}"}]}]}]}`
	in, err := text.FromAnthropic([]byte(anthropic))
	require.NoError(t, err)
	got, err := ct.Render(in)
	require.NoError(t, err)
	assert.Equal(t, want, got)

	responses := `{"model":"qwen3",
	 "tools":[{"type":"function","name":"get_weather","description":"Get the current weather in a city","parameters":` + weatherSchema + `}],
	 "input":[
	  {"role":"user","content":[{"type":"input_text","text":"Weather in Paris?"}]},
	  {"type":"function_call","call_id":"call_1","name":"get_weather","arguments":"{\"city\": \"Paris\", \"unit\": \"celsius\"}"},
	  {"type":"function_call_output","call_id":"call_1","output":"{\"temp\": 21, \"sky\": \"clear\"}"}]}`
	in, err = text.FromResponses([]byte(responses))
	require.NoError(t, err)
	got, err = ct.Render(in)
	require.NoError(t, err)
	assert.Equal(t, want, got)
}

func TestAnthropicSystemThinkingAndStrings(t *testing.T) {
	t.Parallel()
	in, err := text.FromAnthropic([]byte(`{"system":[{"type":"text","text":"Be brief."}],"messages":[
	  {"role":"user","content":"Hi"},
	  {"role":"assistant","content":[{"type":"thinking","thinking":"greet"},{"type":"text","text":"Hello"}]},
	  {"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}]}`))
	require.NoError(t, err)
	assert.JSONEq(t, `[{"role":"system","content":"Be brief."},{"role":"user","content":"Hi"},
	  {"role":"assistant","content":"Hello","reasoning_content":"greet"},
	  {"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}]`, string(in.Messages))
	assert.Nil(t, in.Tools)
	assert.True(t, in.AddGenerationPrompt)

	in, err = text.FromResponses([]byte(`{"instructions":"Be brief.","input":"Hi"}`))
	require.NoError(t, err)
	assert.JSONEq(t, `[{"role":"system","content":"Be brief."},{"role":"user","content":"Hi"}]`, string(in.Messages))

	for _, bad := range []string{`{"messages":{}}`, `{"messages":[{"role":"user","content":5}]}`, `[`} {
		_, err := text.FromAnthropic([]byte(bad))
		assert.Error(t, err, bad)
	}
	_, err = text.FromResponses([]byte(`{"input":5}`))
	assert.Error(t, err)
}

func TestChatPromptCountsTheRenderedPrompt(t *testing.T) {
	t.Parallel()
	dir := texttest.Dir(t, texttest.Llama3_1)
	m, err := text.LoadModel(text.OSFiles{}, dir, text.LoadOptions{})
	require.NoError(t, err)
	in, err := text.FromAnthropic([]byte(`{"messages":[{"role":"user","content":"Hello, world!"}]}`))
	require.NoError(t, err)
	prompt, ids, err := m.ChatPrompt(in)
	require.NoError(t, err)
	assert.Equal(t, "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nHello, world!<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n", prompt)
	assert.Equal(t, []uint32{128000, 128006, 882, 128007, 271, 9906, 11, 1917, 0, 128009, 128006, 78191, 128007, 271}, ids)

	m.ChatTemplate = nil
	_, _, err = m.ChatPrompt(in)
	assert.ErrorIs(t, err, text.ErrNoChatTemplate)
}

func TestNamedToolUseTemplateServesRequestsWithTools(t *testing.T) {
	t.Parallel()
	cfg := []byte(`{"chat_template":[{"name":"default","template":"plain:{{ messages[0].content }}"},{"name":"tool_use","template":"tools:{{ tools | length }}"}]}`)
	m, err := text.LoadModel(text.MapFiles{"tokenizer.json": tinyTokenizerJSON(t), "tokenizer_config.json": cfg}, ".", text.LoadOptions{})
	require.NoError(t, err)
	msgs := []byte(`[{"role":"user","content":"hi"}]`)
	p, _, err := m.ChatPrompt(text.ChatInput{Messages: msgs})
	require.NoError(t, err)
	assert.Equal(t, "plain:hi", p)
	p, ids, err := m.ChatPrompt(text.ChatInput{Messages: msgs, Tools: []byte(`[{"type":"function","function":{"name":"f"}}]`)})
	require.NoError(t, err)
	assert.Equal(t, "tools:1", p)
	assert.Equal(t, len("tools:1"), len(ids), "the tiny vocabulary has one token per byte here")
}
