package respond

import "strings"

// Delta is what one step of a sample's output adds: reasoning text, answer text and completed
// tool calls, after the reasoning parser and then the tool parser have seen it.
type Delta struct {
	Reasoning string
	Content   string
	ToolCalls []ToolCall
}

// Empty reports whether d carries nothing.
func (d Delta) Empty() bool { return d.Reasoning == "" && d.Content == "" && len(d.ToolCalls) == 0 }

// OutputParser runs a sample's decoded text through the configured parsers. Either parser may
// be nil (plain text).
type OutputParser struct {
	reasoning *ReasoningParser
	tools     ToolParser
}

// NewOutputParser combines the parsers for one sample.
func NewOutputParser(reasoning *ReasoningParser, tools ToolParser) *OutputParser {
	return &OutputParser{reasoning: reasoning, tools: tools}
}

// Push adds decoded text.
func (o *OutputParser) Push(text string) Delta {
	var d Delta
	answer := text
	if o.reasoning != nil {
		d.Reasoning, answer = o.reasoning.Push(text)
	}
	d.Content, d.ToolCalls = o.toolPush(answer)
	return d
}

// Flush ends the output and returns what the parsers still held.
func (o *OutputParser) Flush() Delta {
	var d Delta
	if o.reasoning != nil {
		var answer string
		d.Reasoning, answer = o.reasoning.Flush()
		d.Content, d.ToolCalls = o.toolPush(answer)
	}
	if o.tools != nil {
		content, calls := o.tools.Flush()
		d.Content += content
		d.ToolCalls = append(d.ToolCalls, calls...)
	}
	return d
}

func (o *OutputParser) toolPush(text string) (string, []ToolCall) {
	if o.tools == nil {
		return text, nil
	}
	return o.tools.Push(text)
}

// ParsersForModel picks the --tool-call-parser and --reasoning-parser names for a model id
// when none is configured (SMG chooses by model family): Qwen3 → qwen + qwen3 (qwen3-thinking
// for the *-Thinking-* models), Qwen2/2.5 → qwen, Llama-3.x → llama, DeepSeek-R1 and its
// distills → deepseek-r1. "" means none.
func ParsersForModel(model string) (toolParser, reasoningParser string) {
	m := strings.ToLower(model)
	switch {
	case strings.Contains(m, "deepseek-r1"):
		return "", "deepseek-r1"
	case strings.Contains(m, "qwen3") && strings.Contains(m, "thinking"):
		return "qwen", "qwen3-thinking"
	case strings.Contains(m, "qwen3"):
		return "qwen", "qwen3"
	case strings.Contains(m, "qwen2"):
		return "qwen", ""
	case strings.Contains(m, "llama-3") || strings.Contains(m, "llama3"):
		return "llama", ""
	}
	return "", ""
}
