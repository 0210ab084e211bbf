package text

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/ardanlabs/jinja"
)

// ContentFormat is how a template expects message content: a plain string, or OpenAI's list of
// parts ({"type":"text","text":...}).
type ContentFormat int

const (
	// ContentString: text parts are joined with "\n" and null content becomes "".
	ContentString ContentFormat = iota
	// ContentParts: a string becomes [{"type":"text","text":s}] and null becomes [].
	ContentParts
)

// partsLoop finds a template that iterates over a message's content, the sign that it renders
// OpenAI content parts itself (SMG and vLLM detect the format from the template's AST).
var partsLoop = regexp.MustCompile(`\{%-?\s*for\s+\w+\s+in\s+\w+(\[['"]content['"]\]|\.content)\s*-?%\}`)

// TemplateOptions are the model facts a chat template sees besides the request.
type TemplateOptions struct {
	// BOSToken, EOSToken, UNKToken, PADToken are the special tokens of tokenizer_config.json;
	// an empty string leaves the variable undefined, as SMG does.
	BOSToken, EOSToken, UNKToken, PADToken string
	// Now is the clock strftime_now reads; nil means time.Now.
	Now func() time.Time
}

// ChatTemplate is a compiled chat template. Render is safe for concurrent use.
type ChatTemplate struct {
	tmpl   *jinja.Template
	format ContentFormat
	base   map[string]jinja.Value
}

// ErrTemplate wraps every template compile and render error (a template's raise_exception
// included); the pipeline answers a render error as a client error (400), the message is the
// template's own.
var ErrTemplate = errors.New("chat template")

// CompileChatTemplate compiles a HF chat template (Jinja2 source) with HF's conventions:
// trim_blocks, lstrip_blocks, an HF-compatible tojson, raise_exception and strftime_now.
func CompileChatTemplate(source string, opts TemplateOptions) (*ChatTemplate, error) {
	fixed, _ := fixWhitespace(source)
	tmpl, err := jinja.Compile(fixed)
	if err != nil {
		return nil, fmt.Errorf("%w: compile: %v", ErrTemplate, err)
	}
	c := &ChatTemplate{tmpl: tmpl, base: map[string]jinja.Value{}}
	if partsLoop.MatchString(source) {
		c.format = ContentParts
	}
	for name, v := range map[string]string{"bos_token": opts.BOSToken, "eos_token": opts.EOSToken, "unk_token": opts.UNKToken, "pad_token": opts.PADToken} {
		if v != "" {
			c.base[name] = jinja.NewString(v)
		}
	}
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	c.base[indentedTojsonName] = jinja.NewCallable(indentedTojsonName, indentedTojsonFunc)
	c.base["strftime_now"] = jinja.NewCallable("strftime_now", func(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
		format := "%Y-%m-%d"
		if len(args) > 0 && args[0].IsString() {
			format = args[0].AsString()
		}
		return jinja.NewString(strftime(now(), format)), nil
	})
	return c, nil
}

// Format is the content format detected from the template source.
func (c *ChatTemplate) Format() ContentFormat { return c.format }

// ChatInput is what one chat request gives the template. Messages, Tools and Documents are
// the request's JSON as sent (arrays); absent fields stay undefined in the template.
type ChatInput struct {
	Messages            json.RawMessage
	Tools               json.RawMessage
	Documents           json.RawMessage
	AddGenerationPrompt bool
	// TemplateKwargs is a JSON object merged over the context (e.g. {"enable_thinking":false}).
	TemplateKwargs json.RawMessage
}

// Render renders the prompt text for in. Messages are prepared as HF/vLLM do: tool-call
// arguments given as a JSON string become objects, and content follows Format. Errors wrap
// ErrTemplate (bad JSON, a template error, raise_exception).
func (c *ChatTemplate) Render(in ChatInput) (string, error) {
	ctx := make(map[string]jinja.Value, len(c.base)+8)
	for k, v := range c.base {
		ctx[k] = v
	}
	msgs, err := jsonToValue(in.Messages)
	if err != nil || !msgs.IsList() {
		return "", fmt.Errorf("%w: messages must be a JSON array: %v", ErrTemplate, err)
	}
	for _, m := range msgs.AsList().Items {
		if m.IsDict() {
			c.prepareMessage(m.AsDict())
		}
	}
	ctx["messages"] = msgs
	ctx["add_generation_prompt"] = jinja.NewBool(in.AddGenerationPrompt)
	for name, raw := range map[string]json.RawMessage{"tools": in.Tools, "documents": in.Documents} {
		if len(raw) == 0 || string(raw) == "null" {
			continue
		}
		v, err := jsonToValue(raw)
		if err != nil {
			return "", fmt.Errorf("%w: %s: %v", ErrTemplate, name, err)
		}
		ctx[name] = v
	}
	if len(in.TemplateKwargs) > 0 && string(in.TemplateKwargs) != "null" {
		kw, err := jsonToValue(in.TemplateKwargs)
		if err != nil || !kw.IsDict() {
			return "", fmt.Errorf("%w: template kwargs must be a JSON object", ErrTemplate)
		}
		d := kw.AsDict()
		for _, k := range d.OrderedKeys() {
			ctx[k], _ = d.Get(k)
		}
	}
	out, err := c.tmpl.RenderValues(ctx)
	if err != nil {
		return "", fmt.Errorf("%w: %v", ErrTemplate, err)
	}
	return out, nil
}

func (c *ChatTemplate) prepareMessage(m *jinja.Dict) {
	if tcs, ok := m.Get("tool_calls"); ok && tcs.IsList() {
		for _, tc := range tcs.AsList().Items {
			if !tc.IsDict() {
				continue
			}
			f, ok := tc.AsDict().Get("function")
			if !ok || !f.IsDict() {
				continue
			}
			if args, ok := f.AsDict().Get("arguments"); ok && args.IsString() {
				if v, err := jsonToValue([]byte(args.AsString())); err == nil {
					f.AsDict().Set("arguments", v)
				}
			}
		}
	}
	content, ok := m.Get("content")
	if !ok {
		if c.format == ContentString {
			return
		}
		content = jinja.None()
	}
	switch {
	case c.format == ContentString && content.IsList():
		var texts []string
		for _, p := range content.AsList().Items {
			if !p.IsDict() {
				continue
			}
			typ, _ := p.AsDict().Get("type")
			txt, _ := p.AsDict().Get("text")
			if typ.IsString() && typ.AsString() == "text" && txt.IsString() {
				texts = append(texts, txt.AsString())
			}
		}
		m.Set("content", jinja.NewString(strings.Join(texts, "\n")))
	case c.format == ContentString && content.IsNone():
		m.Set("content", jinja.NewString(""))
	case c.format == ContentParts && content.IsString():
		part := jinja.NewDict()
		part.AsDict().Set("type", jinja.NewString("text"))
		part.AsDict().Set("text", content)
		m.Set("content", jinja.NewList([]jinja.Value{part}))
	case c.format == ContentParts && content.IsNone():
		m.Set("content", jinja.NewList(nil))
	}
}
