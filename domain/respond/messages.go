package respond

import "encoding/json"

// Anthropic Messages API (POST /v1/messages) built by the gateway, and count_tokens.

type anthropicUsage struct {
	InputTokens          int `json:"input_tokens"`
	OutputTokens         int `json:"output_tokens"`
	CacheReadInputTokens int `json:"cache_read_input_tokens"`
}

type anthropicBlock struct {
	Type      string           `json:"type"`
	Text      *string          `json:"text,omitempty"`
	Thinking  *string          `json:"thinking,omitempty"`
	Signature *string          `json:"signature,omitempty"`
	ID        string           `json:"id,omitempty"`
	Name      string           `json:"name,omitempty"`
	Input     *json.RawMessage `json:"input,omitempty"`
}

type anthropicMessage struct {
	ID           string           `json:"id"`
	Type         string           `json:"type"`
	Role         string           `json:"role"`
	Model        string           `json:"model"`
	Content      []anthropicBlock `json:"content"`
	StopReason   *string          `json:"stop_reason"`
	StopSequence *string          `json:"stop_sequence"`
	Usage        anthropicUsage   `json:"usage"`
}

// anthropicStop maps a finish to stop_reason and stop_sequence: tool calls → "tool_use"; a
// matched client stop sequence → "stop_sequence"; length → "max_tokens"; else "end_turn".
func anthropicStop(f Finish, toolCalls bool) (string, *string) {
	switch {
	case f.Reason == "length":
		return "max_tokens", nil
	case toolCalls:
		return "tool_use", nil
	case f.MatchedStop != nil:
		return "stop_sequence", f.MatchedStop
	}
	return "end_turn", nil
}

func toolInput(args string) *json.RawMessage {
	raw := json.RawMessage(args)
	if !json.Valid(raw) {
		raw = json.RawMessage("{}")
	}
	return &raw
}

// Message is the non-streaming Messages body for one sample (the API has no n): thinking,
// text and tool_use blocks in that order.
func Message(m Meta, s Sample, u Usage) []byte {
	msg := anthropicMessage{ID: m.ID, Type: "message", Role: "assistant", Model: m.Model, Content: []anthropicBlock{},
		Usage: anthropicUsage{InputTokens: u.PromptTokens, OutputTokens: u.CompletionTokens, CacheReadInputTokens: u.CachedTokens}}
	if s.Reasoning != "" {
		msg.Content = append(msg.Content, anthropicBlock{Type: "thinking", Thinking: strPtr(s.Reasoning), Signature: strPtr("")})
	}
	if s.Content != "" {
		msg.Content = append(msg.Content, anthropicBlock{Type: "text", Text: strPtr(s.Content)})
	}
	for _, c := range s.ToolCalls {
		msg.Content = append(msg.Content, anthropicBlock{Type: "tool_use", ID: c.ID, Name: c.Name, Input: toolInput(c.Arguments)})
	}
	reason, seq := anthropicStop(s.Finish, len(s.ToolCalls) > 0)
	msg.StopReason, msg.StopSequence = &reason, seq
	return marshal(msg)
}

// CountTokens is the /v1/messages/count_tokens body, answered from the tokenizer with no leg.
func CountTokens(inputTokens int) []byte {
	return marshal(map[string]int{"input_tokens": inputTokens})
}

// MessageStream writes the Messages SSE events: message_start, then per block
// content_block_start / content_block_delta (thinking_delta, text_delta, input_json_delta) /
// content_block_stop, then message_delta (stop_reason, usage.output_tokens) and message_stop.
// A block closes when output of another kind begins. Not safe for concurrent use.
type MessageStream struct {
	meta    Meta
	open    string // type of the open block, "" when none
	index   int    // index of the open block, or of the next one
	tools   bool
	started bool
}

// NewMessageStream starts a stream.
func NewMessageStream(m Meta) *MessageStream { return &MessageStream{meta: m} }

// Start returns message_start; inputTokens and cached are the prompt counts.
func (s *MessageStream) Start(inputTokens, cached int) []byte {
	s.started = true
	msg := anthropicMessage{ID: s.meta.ID, Type: "message", Role: "assistant", Model: s.meta.Model, Content: []anthropicBlock{},
		Usage: anthropicUsage{InputTokens: inputTokens, CacheReadInputTokens: cached}}
	return sseEvent("message_start", map[string]any{"type": "message_start", "message": msg})
}

func (s *MessageStream) closeBlock() []byte {
	if s.open == "" {
		return nil
	}
	out := sseEvent("content_block_stop", map[string]any{"type": "content_block_stop", "index": s.index})
	s.open = ""
	s.index++
	return out
}

func (s *MessageStream) openBlock(kind string, block anthropicBlock) []byte {
	out := s.closeBlock()
	s.open = kind
	return append(out, sseEvent("content_block_start", map[string]any{"type": "content_block_start", "index": s.index, "content_block": block})...)
}

func (s *MessageStream) delta(delta map[string]any) []byte {
	return sseEvent("content_block_delta", map[string]any{"type": "content_block_delta", "index": s.index, "delta": delta})
}

// Delta returns the events for one step of output.
func (s *MessageStream) Delta(d Delta) []byte {
	var out []byte
	if d.Reasoning != "" {
		if s.open != "thinking" {
			out = append(out, s.openBlock("thinking", anthropicBlock{Type: "thinking", Thinking: strPtr(""), Signature: strPtr("")})...)
		}
		out = append(out, s.delta(map[string]any{"type": "thinking_delta", "thinking": d.Reasoning})...)
	}
	if d.Content != "" {
		if s.open != "text" {
			out = append(out, s.openBlock("text", anthropicBlock{Type: "text", Text: strPtr("")})...)
		}
		out = append(out, s.delta(map[string]any{"type": "text_delta", "text": d.Content})...)
	}
	for _, c := range d.ToolCalls {
		s.tools = true
		empty := json.RawMessage("{}")
		out = append(out, s.openBlock("tool_use", anthropicBlock{Type: "tool_use", ID: c.ID, Name: c.Name, Input: &empty})...)
		out = append(out, s.delta(map[string]any{"type": "input_json_delta", "partial_json": string(*toolInput(c.Arguments))})...)
	}
	return out
}

// Finish closes the open block and returns message_delta and message_stop.
func (s *MessageStream) Finish(f Finish, outputTokens int) []byte {
	out := s.closeBlock()
	reason, seq := anthropicStop(f, s.tools)
	out = append(out, sseEvent("message_delta", map[string]any{"type": "message_delta",
		"delta": map[string]any{"stop_reason": reason, "stop_sequence": seq}, "usage": map[string]int{"output_tokens": outputTokens}})...)
	return append(out, sseEvent("message_stop", map[string]any{"type": "message_stop"})...)
}

// Error returns the Anthropic in-stream error event that ends a stream which failed after
// it started: `event: error` with {"type":"error","error":{"type":typ,"message":message}}
// (Anthropic streaming "Error events"; typ is e.g. "api_error", "overloaded_error").
func (s *MessageStream) Error(typ, message string) []byte {
	return sseEvent("error", map[string]any{"type": "error", "error": map[string]any{"type": typ, "message": message}})
}
