package respond

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
)

// ToolCall is one parsed function call. Arguments is a JSON object text, as OpenAI sends it.
type ToolCall struct {
	ID        string
	Name      string
	Arguments string
}

// ToolParser extracts tool calls from streamed model text. Push returns the answer text that
// is certainly not part of a call and the calls completed so far; Flush ends the output. One
// instance serves one sample.
type ToolParser interface {
	Push(text string) (content string, calls []ToolCall)
	Flush() (content string, calls []ToolCall)
}

// toolParsers maps the --tool-call-parser names (SMG's spelling, with aliases) to constructors.
var toolParsers = map[string]func(newID func() string) ToolParser{
	"qwen":  newQwenToolParser,
	"qwen3": newQwenToolParser,
	"llama": newLlamaToolParser,
	// llama3_json is vLLM's name for the same format.
	"llama3_json": newLlamaToolParser,
}

// ToolParserNames lists the supported --tool-call-parser values, sorted.
func ToolParserNames() []string {
	names := make([]string, 0, len(toolParsers))
	for n := range toolParsers {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// NewToolParser returns the parser called name. newID makes tool call ids (nil: "call_" +
// 24 random hex digits). Unknown names are an error listing the supported ones.
func NewToolParser(name string, newID func() string) (ToolParser, error) {
	mk, ok := toolParsers[name]
	if !ok {
		return nil, fmt.Errorf("respond: unknown tool call parser %q (supported: %s)", name, strings.Join(ToolParserNames(), ", "))
	}
	if newID == nil {
		newID = RandomToolCallID
	}
	return mk(newID), nil
}

// RandomToolCallID returns "call_" + 24 random hex digits.
func RandomToolCallID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return "call_" + hex.EncodeToString(b[:])
}

// callJSON is the object both formats carry; Llama-3 names the arguments "parameters".
type callJSON struct {
	Name       string          `json:"name"`
	Arguments  json.RawMessage `json:"arguments"`
	Parameters json.RawMessage `json:"parameters"`
}

func (c callJSON) toolCall(id string) (ToolCall, bool) {
	args := c.Arguments
	if len(args) == 0 {
		args = c.Parameters
	}
	if c.Name == "" {
		return ToolCall{}, false
	}
	args = bytes.TrimSpace(args)
	if len(args) == 0 || string(args) == "null" {
		args = []byte("{}")
	}
	if args[0] == '"' { // arguments given as a JSON string holding JSON
		var s string
		if json.Unmarshal(args, &s) == nil && json.Valid([]byte(s)) {
			args = []byte(s)
		}
	}
	var compact bytes.Buffer
	if json.Compact(&compact, args) != nil {
		return ToolCall{}, false
	}
	return ToolCall{ID: id, Name: c.Name, Arguments: compact.String()}, true
}

// qwenToolParser reads Qwen's <tool_call>\n{"name": …, "arguments": {…}}\n</tool_call> blocks
// (Qwen2.5/Qwen3 chat templates). A block that is not valid JSON is passed on as text.
type qwenToolParser struct {
	newID  func() string
	buf    string
	inCall bool
	called bool
}

const qwenStart, qwenEnd = "<tool_call>", "</tool_call>"

func newQwenToolParser(newID func() string) ToolParser { return &qwenToolParser{newID: newID} }

func (p *qwenToolParser) Push(text string) (string, []ToolCall) {
	p.buf += text
	var content strings.Builder
	var calls []ToolCall
	for {
		if !p.inCall {
			i := strings.Index(p.buf, qwenStart)
			if i < 0 {
				hold := partialSuffix(p.buf, qwenStart)
				p.emitText(&content, p.buf[:len(p.buf)-hold])
				p.buf = p.buf[len(p.buf)-hold:]
				return content.String(), calls
			}
			p.emitText(&content, p.buf[:i])
			p.buf, p.inCall = p.buf[i+len(qwenStart):], true
		}
		j := strings.Index(p.buf, qwenEnd)
		if j < 0 {
			return content.String(), calls
		}
		body := p.buf[:j]
		p.buf, p.inCall = p.buf[j+len(qwenEnd):], false
		if call, ok := p.parse(body); ok {
			calls = append(calls, call)
			p.called = true
		} else {
			content.WriteString(qwenStart + body + qwenEnd)
		}
	}
}

// emitText passes text on, except the whitespace between and after calls.
func (p *qwenToolParser) emitText(b *strings.Builder, s string) {
	if p.called && strings.TrimSpace(s) == "" {
		return
	}
	b.WriteString(s)
}

func (p *qwenToolParser) parse(body string) (ToolCall, bool) {
	var c callJSON
	if json.Unmarshal([]byte(strings.TrimSpace(body)), &c) != nil {
		return ToolCall{}, false
	}
	return c.toolCall(p.newID())
}

func (p *qwenToolParser) Flush() (string, []ToolCall) {
	rest := p.buf
	p.buf = ""
	if p.inCall {
		p.inCall = false
		if call, ok := p.parse(rest); ok { // the output ended before </tool_call>
			return "", []ToolCall{call}
		}
		return qwenStart + rest, nil
	}
	var b strings.Builder
	p.emitText(&b, rest)
	return b.String(), nil
}

// llamaToolParser reads Llama-3.x JSON tool calls: output that starts (after whitespace) with
// <|python_tag|> or "{" is one or more {"name": …, "parameters": {…}} objects separated by ";".
// Other output is passed through as it arrives; a tool-call output is held to the end.
type llamaToolParser struct {
	newID   func() string
	buf     string
	decided bool
	isCall  bool
}

const pythonTag = "<|python_tag|>"

func newLlamaToolParser(newID func() string) ToolParser { return &llamaToolParser{newID: newID} }

func (p *llamaToolParser) Push(text string) (string, []ToolCall) {
	if p.decided && !p.isCall {
		return text, nil
	}
	p.buf += text
	if !p.decided {
		t := strings.TrimLeft(p.buf, " \t\r\n")
		switch {
		case t == "" || (strings.HasPrefix(pythonTag, t) && t != pythonTag):
			return "", nil
		case strings.HasPrefix(t, pythonTag) || strings.HasPrefix(t, "{"):
			p.decided, p.isCall = true, true
		default:
			p.decided = true
			out := p.buf
			p.buf = ""
			return out, nil
		}
	}
	return "", nil
}

func (p *llamaToolParser) Flush() (string, []ToolCall) {
	rest := p.buf
	p.buf = ""
	if !p.isCall {
		return rest, nil
	}
	body := strings.TrimSpace(rest)
	body = strings.TrimSpace(strings.TrimPrefix(body, pythonTag))
	var calls []ToolCall
	for body != "" {
		dec := json.NewDecoder(strings.NewReader(body))
		var c callJSON
		if dec.Decode(&c) != nil {
			return rest, nil
		}
		call, ok := c.toolCall(p.newID())
		if !ok {
			return rest, nil
		}
		calls = append(calls, call)
		body = strings.TrimLeft(body[dec.InputOffset():], " \t\r\n;")
	}
	if len(calls) == 0 {
		return rest, nil
	}
	return "", calls
}

var (
	_ ToolParser = (*qwenToolParser)(nil)
	_ ToolParser = (*llamaToolParser)(nil)
)
