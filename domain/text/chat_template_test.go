package text_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/domain/text"
	"github.com/smg-go/smg/domain/text/texttest"
)

type chatRequest struct {
	Name                string          `json:"name"`
	Messages            json.RawMessage `json:"messages"`
	Tools               json.RawMessage `json:"tools"`
	Documents           json.RawMessage `json:"documents"`
	AddGenerationPrompt bool            `json:"add_generation_prompt"`
	TemplateKwargs      json.RawMessage `json:"template_kwargs"`
}

type templateGolden struct {
	Template string  `json:"template"`
	Request  string  `json:"request"`
	Rendered *string `json:"rendered"`
	Error    string  `json:"error"`
}

// The fixed clock of testdata/gen_templates.py.
var fixedNow = func() time.Time { return time.Date(2026, 1, 2, 15, 4, 5, 0, time.UTC) }

func chatTemplates(t testing.TB) map[string]*text.ChatTemplate {
	t.Helper()
	out := map[string]*text.ChatTemplate{}
	for _, model := range []string{texttest.Qwen3, texttest.Llama3_1} {
		cfg, err := text.ParseTokenizerConfig(mustRead(t, filepath.Join(texttest.Dir(t, model), "tokenizer_config.json")))
		require.NoError(t, err)
		opts := cfg.TemplateOptions()
		opts.Now = fixedNow
		ct, err := text.CompileChatTemplate(cfg.ChatTemplate, opts)
		require.NoError(t, err, model)
		out[model] = ct
	}
	llama32, err := text.CompileChatTemplate(string(mustRead(t, texttest.Template(t, "llama3_2"))),
		text.TemplateOptions{BOSToken: "<|begin_of_text|>", EOSToken: "<|eot_id|>", Now: fixedNow})
	require.NoError(t, err)
	out["llama3_2"] = llama32
	for _, name := range []string{"whitespace", "strict"} {
		ct, err := text.CompileChatTemplate(string(mustRead(t, filepath.Join("testdata", "templates", name+".jinja"))),
			text.TemplateOptions{BOSToken: "<s>", EOSToken: "</s>", Now: fixedNow})
		require.NoError(t, err, name)
		out[name] = ct
	}
	return out
}

func mustRead(t testing.TB, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	return data
}

func chatRequests(t testing.TB) map[string]chatRequest {
	var reqs []chatRequest
	readJSON(t, "chat_requests.json", &reqs)
	m := map[string]chatRequest{}
	for _, r := range reqs {
		m[r.Name] = r
	}
	return m
}

func (r chatRequest) input() text.ChatInput {
	return text.ChatInput{Messages: r.Messages, Tools: r.Tools, Documents: r.Documents,
		AddGenerationPrompt: r.AddGenerationPrompt, TemplateKwargs: r.TemplateKwargs}
}

// Goldens come from Python Jinja2 configured as HF transformers (testdata/gen_templates.py).
func TestChatTemplatesRenderLikeJinja2(t *testing.T) {
	t.Parallel()
	templates := chatTemplates(t)
	reqs := chatRequests(t)
	var goldens []templateGolden
	readJSON(t, "golden_templates.json", &goldens)
	require.GreaterOrEqual(t, len(goldens), 24)
	for _, g := range goldens {
		ct, ok := templates[g.Template]
		require.True(t, ok, g.Template)
		got, err := ct.Render(reqs[g.Request].input())
		if g.Error != "" {
			require.Error(t, err, "%s/%s", g.Template, g.Request)
			assert.ErrorIs(t, err, text.ErrTemplate)
			assert.Contains(t, err.Error(), g.Error, "%s/%s", g.Template, g.Request)
			continue
		}
		require.NoError(t, err, "%s/%s", g.Template, g.Request)
		assert.Equal(t, *g.Rendered, got, "%s/%s", g.Template, g.Request)
	}
}

func TestContentFormatIsDetectedFromTheTemplate(t *testing.T) {
	t.Parallel()
	parts, err := text.CompileChatTemplate(`{% for m in messages %}{% for p in m['content'] %}[{{ p.text }}]{% endfor %}{% endfor %}`, text.TemplateOptions{})
	require.NoError(t, err)
	assert.Equal(t, text.ContentParts, parts.Format())
	got, err := parts.Render(text.ChatInput{Messages: json.RawMessage(`[{"role":"user","content":"plain"},{"role":"assistant","content":null}]`)})
	require.NoError(t, err)
	assert.Equal(t, "[plain]", got)

	str, err := text.CompileChatTemplate(`{% for m in messages %}{{ m.content }}|{% endfor %}`, text.TemplateOptions{})
	require.NoError(t, err)
	assert.Equal(t, text.ContentString, str.Format())
	got, err = str.Render(text.ChatInput{Messages: json.RawMessage(`[{"role":"user","content":[{"type":"text","text":"a"},{"type":"image_url","image_url":{}},{"type":"text","text":"b"}]}]`)})
	require.NoError(t, err)
	assert.Equal(t, "a\nb|", got)
}

func TestBadTemplateInputIsAnError(t *testing.T) {
	t.Parallel()
	ct, err := text.CompileChatTemplate(`{{ messages[0].content }}`, text.TemplateOptions{})
	require.NoError(t, err)
	for _, in := range []text.ChatInput{
		{Messages: json.RawMessage(`{"role":"user"}`)},
		{Messages: json.RawMessage(`[`)},
		{Messages: json.RawMessage(`[]`), TemplateKwargs: json.RawMessage(`[1]`)},
	} {
		_, err := ct.Render(in)
		assert.ErrorIs(t, err, text.ErrTemplate)
	}
	_, err = text.CompileChatTemplate(`{% if x %}`, text.TemplateOptions{})
	assert.ErrorIs(t, err, text.ErrTemplate)
}

func BenchmarkRenderQwen3WithToolCall(b *testing.B) {
	ct := chatTemplates(b)[texttest.Qwen3]
	in := chatRequests(b)["parallel_tool_calls"].input()
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, err := ct.Render(in); err != nil {
			b.Fatal(err)
		}
	}
}

// ardanlabs/jinja v1.8.0 alone drops the newline between `}}` and a block tag at the start of
// the next line; Jinja2 keeps it.
func TestNewlineBeforeBlockTagIsKept(t *testing.T) {
	t.Parallel()
	cases := map[string]string{
		"{% for m in messages %}{{ m.role }}\n{% endfor %}":             "user\nassistant\n",
		"{% for m in messages %}\n  {{ m.role }}\n  {% endfor %}done\n": "  user\n  assistant\ndone",
		"{% for m in messages -%}\n  {{ m.role }} {%- endfor %}":        "userassistant",
		"a {# c #}\n{{ messages | length }}":                            "a 2",
	}
	for src, want := range cases {
		ct, err := text.CompileChatTemplate(src, text.TemplateOptions{})
		require.NoError(t, err, src)
		got, err := ct.Render(text.ChatInput{Messages: json.RawMessage(`[{"role":"user","content":""},{"role":"assistant","content":""}]`)})
		require.NoError(t, err, src)
		assert.Equal(t, want, got, src)
	}
}

// tojson(indent=N) prints like Python's json.dumps(ensure_ascii=False, indent=N): keys in the
// order sent, 1.0 stays a float, only quotes, backslashes and control characters escaped.
func TestIndentedTojsonMatchesPython(t *testing.T) {
	t.Parallel()
	ct, err := text.CompileChatTemplate(`{{ x | tojson(indent=2) }}|{{ x['n'] | tojson(indent=2) }}`, text.TemplateOptions{})
	require.NoError(t, err)
	got, err := ct.Render(text.ChatInput{Messages: json.RawMessage(`[]`),
		TemplateKwargs: json.RawMessage(`{"x":{"b":1,"a":[1.0,2.5,1e20,-0.0,true,null,{}],"s":"é\"\\\n\t\u0001<>&\u2028","e":[],"n":{"z":{"y":[]}}}}`)})
	require.NoError(t, err)
	want := "{\n  \"b\": 1,\n  \"a\": [\n    1.0,\n    2.5,\n    1e+20,\n    -0.0,\n    true,\n    null,\n    {}\n  ],\n  \"s\": \"\u00e9\\\"\\\\\\n\\t\\u0001<>&\u2028\",\n  \"e\": [],\n  \"n\": {\n    \"z\": {\n      \"y\": []\n    }\n  }\n}" +
		"|{\n  \"z\": {\n    \"y\": []\n  }\n}"
	assert.Equal(t, want, got)
}
