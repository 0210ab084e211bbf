package text

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// Requests of the Anthropic Messages and OpenAI Responses APIs become chat-template input in
// OpenAI chat shape, the way vLLM's and SMG's translation layers do: Anthropic tool_use blocks
// become tool_calls, tool_result blocks become role "tool" messages, thinking becomes
// reasoning_content; Responses items function_call / function_call_output likewise; tools
// become {"type":"function","function":{name, description, parameters}} with the schema's key
// order kept. Used to render prompts and to answer /v1/messages/count_tokens without a leg.

type chatMsg struct {
	Role             string         `json:"role"`
	Content          any            `json:"content"`
	ReasoningContent string         `json:"reasoning_content,omitempty"`
	ToolCalls        []chatToolCall `json:"tool_calls,omitempty"`
	ToolCallID       string         `json:"tool_call_id,omitempty"`
}

type chatToolCall struct {
	ID       string           `json:"id"`
	Type     string           `json:"type"`
	Function chatToolFunction `json:"function"`
}

type chatToolFunction struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

type chatTool struct {
	Type     string       `json:"type"`
	Function chatToolSpec `json:"function"`
}

type chatToolSpec struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
}

type textPart struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// anthropicBlock is one content block of a Messages request.
type anthropicBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	Thinking  string          `json:"thinking"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
	Source    *struct {
		Type      string `json:"type"`
		MediaType string `json:"media_type"`
		Data      string `json:"data"`
		URL       string `json:"url"`
	} `json:"source"`
}

// blocks reads a string-or-blocks field.
func blocks(raw json.RawMessage) ([]anthropicBlock, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, err
		}
		return []anthropicBlock{{Type: "text", Text: s}}, nil
	}
	var out []anthropicBlock
	err := json.Unmarshal(raw, &out)
	return out, err
}

func joinText(bs []anthropicBlock) string {
	var parts []string
	for _, b := range bs {
		if b.Type == "text" {
			parts = append(parts, b.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// FromAnthropic converts a /v1/messages request body into chat-template input (with the
// generation prompt). Errors are client errors (malformed body).
func FromAnthropic(body []byte) (ChatInput, error) {
	var req struct {
		System   json.RawMessage `json:"system"`
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
		Tools []struct {
			Name        string          `json:"name"`
			Description string          `json:"description"`
			InputSchema json.RawMessage `json:"input_schema"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		return ChatInput{}, fmt.Errorf("messages request: %w", err)
	}
	var msgs []chatMsg
	sys, err := blocks(req.System)
	if err != nil {
		return ChatInput{}, fmt.Errorf("messages request: system: %w", err)
	}
	if len(sys) > 0 {
		msgs = append(msgs, chatMsg{Role: "system", Content: joinText(sys)})
	}
	for i, m := range req.Messages {
		bs, err := blocks(m.Content)
		if err != nil {
			return ChatInput{}, fmt.Errorf("messages request: messages[%d].content: %w", i, err)
		}
		msg := chatMsg{Role: m.Role}
		var parts []any
		var tools []chatMsg
		for _, b := range bs {
			switch b.Type {
			case "text":
				parts = append(parts, textPart{Type: "text", Text: b.Text})
			case "image":
				if b.Source != nil {
					url := b.Source.URL
					if b.Source.Type == "base64" {
						url = "data:" + b.Source.MediaType + ";base64," + b.Source.Data
					}
					parts = append(parts, map[string]any{"type": "image_url", "image_url": map[string]string{"url": url}})
				}
			case "thinking":
				msg.ReasoningContent += b.Thinking
			case "tool_use":
				args := "{}"
				if len(b.Input) > 0 {
					var c bytes.Buffer
					if json.Compact(&c, b.Input) == nil {
						args = c.String()
					}
				}
				msg.ToolCalls = append(msg.ToolCalls, chatToolCall{ID: b.ID, Type: "function", Function: chatToolFunction{Name: b.Name, Arguments: args}})
			case "tool_result":
				inner, err := blocks(b.Content)
				if err != nil {
					return ChatInput{}, fmt.Errorf("messages request: messages[%d] tool_result: %w", i, err)
				}
				tools = append(tools, chatMsg{Role: "tool", ToolCallID: b.ToolUseID, Content: joinText(inner)})
			}
		}
		msgs = append(msgs, tools...)
		if len(tools) > 0 && len(parts) == 0 {
			continue
		}
		msg.Content = flattenParts(parts)
		msgs = append(msgs, msg)
	}
	var tools []chatTool
	for _, t := range req.Tools {
		tools = append(tools, chatTool{Type: "function", Function: chatToolSpec{Name: t.Name, Description: t.Description, Parameters: t.InputSchema}})
	}
	return chatInput(msgs, tools)
}

// flattenParts keeps text-only content a plain string (as the OpenAI path sends it) and mixed
// content a parts list.
func flattenParts(parts []any) any {
	texts := make([]string, 0, len(parts))
	for _, p := range parts {
		tp, ok := p.(textPart)
		if !ok {
			return parts
		}
		texts = append(texts, tp.Text)
	}
	if len(texts) == 1 {
		return texts[0]
	}
	if len(texts) == 0 {
		return ""
	}
	return parts
}

func chatInput(msgs []chatMsg, tools []chatTool) (ChatInput, error) {
	if msgs == nil {
		msgs = []chatMsg{}
	}
	m, err := json.Marshal(msgs)
	if err != nil {
		return ChatInput{}, err
	}
	in := ChatInput{Messages: m, AddGenerationPrompt: true}
	if len(tools) > 0 {
		if in.Tools, err = json.Marshal(tools); err != nil {
			return ChatInput{}, err
		}
	}
	return in, nil
}

// FromResponses converts a /v1/responses request body (instructions, input as a string or
// items) into chat-template input.
func FromResponses(body []byte) (ChatInput, error) {
	var req struct {
		Instructions string          `json:"instructions"`
		Input        json.RawMessage `json:"input"`
		Tools        []struct {
			Type        string          `json:"type"`
			Name        string          `json:"name"`
			Description string          `json:"description"`
			Parameters  json.RawMessage `json:"parameters"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		return ChatInput{}, fmt.Errorf("responses request: %w", err)
	}
	var msgs []chatMsg
	if req.Instructions != "" {
		msgs = append(msgs, chatMsg{Role: "system", Content: req.Instructions})
	}
	in := bytes.TrimSpace(req.Input)
	if len(in) > 0 && in[0] == '"' {
		var s string
		if err := json.Unmarshal(in, &s); err != nil {
			return ChatInput{}, fmt.Errorf("responses request: input: %w", err)
		}
		msgs = append(msgs, chatMsg{Role: "user", Content: s})
	} else if len(in) > 0 && string(in) != "null" {
		var items []struct {
			Type      string          `json:"type"`
			Role      string          `json:"role"`
			Content   json.RawMessage `json:"content"`
			CallID    string          `json:"call_id"`
			Name      string          `json:"name"`
			Arguments string          `json:"arguments"`
			Output    json.RawMessage `json:"output"`
		}
		if err := json.Unmarshal(in, &items); err != nil {
			return ChatInput{}, fmt.Errorf("responses request: input: %w", err)
		}
		for i, it := range items {
			switch it.Type {
			case "", "message":
				bs, err := responsesParts(it.Content)
				if err != nil {
					return ChatInput{}, fmt.Errorf("responses request: input[%d].content: %w", i, err)
				}
				role := it.Role
				if role == "developer" {
					role = "system"
				}
				msgs = append(msgs, chatMsg{Role: role, Content: bs})
			case "function_call":
				call := chatToolCall{ID: it.CallID, Type: "function", Function: chatToolFunction{Name: it.Name, Arguments: it.Arguments}}
				if n := len(msgs); n > 0 && msgs[n-1].Role == "assistant" {
					msgs[n-1].ToolCalls = append(msgs[n-1].ToolCalls, call)
				} else {
					msgs = append(msgs, chatMsg{Role: "assistant", Content: "", ToolCalls: []chatToolCall{call}})
				}
			case "function_call_output":
				var s string
				if json.Unmarshal(it.Output, &s) != nil {
					s = string(it.Output)
				}
				msgs = append(msgs, chatMsg{Role: "tool", ToolCallID: it.CallID, Content: s})
			}
		}
	}
	var tools []chatTool
	for _, t := range req.Tools {
		if t.Type == "function" {
			tools = append(tools, chatTool{Type: "function", Function: chatToolSpec{Name: t.Name, Description: t.Description, Parameters: t.Parameters}})
		}
	}
	return chatInput(msgs, tools)
}

// responsesParts reads message content: a string, or input_text/output_text parts.
func responsesParts(raw json.RawMessage) (any, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) > 0 && raw[0] == '"' {
		var s string
		err := json.Unmarshal(raw, &s)
		return s, err
	}
	var parts []struct {
		Type     string `json:"type"`
		Text     string `json:"text"`
		ImageURL string `json:"image_url"`
	}
	if len(raw) > 0 && string(raw) != "null" {
		if err := json.Unmarshal(raw, &parts); err != nil {
			return nil, err
		}
	}
	var out []any
	for _, p := range parts {
		switch p.Type {
		case "input_text", "output_text", "text":
			out = append(out, textPart{Type: "text", Text: p.Text})
		case "input_image":
			out = append(out, map[string]any{"type": "image_url", "image_url": map[string]string{"url": p.ImageURL}})
		}
	}
	return flattenParts(out), nil
}
