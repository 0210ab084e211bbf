package api

// Anthropic Messages shapes (/v1/messages, /v1/messages/count_tokens) as SGLang and vLLM
// serve them. Objects allow additional properties.

// AnthropicMessage is one turn of a Messages conversation.
type AnthropicMessage struct {
	_       struct{}     `additionalProperties:"true"`
	Role    string       `json:"role" enum:"user,assistant"`
	Content ContentParts `json:"content" doc:"A string, or an array of content blocks (text, image, tool_use, tool_result, thinking)."`
}

// AnthropicTool is a tool a Messages request offers.
type AnthropicTool struct {
	_           struct{} `additionalProperties:"true"`
	Name        string   `json:"name"`
	Description string   `json:"description,omitempty"`
	InputSchema Object   `json:"input_schema" doc:"JSON Schema of the tool's input."`
}

// MessagesRequest is the POST /v1/messages body.
type MessagesRequest struct {
	_             struct{}           `additionalProperties:"true"`
	Model         string             `json:"model" example:"Qwen/Qwen3-8B"`
	Messages      []AnthropicMessage `json:"messages" minItems:"1" nullable:"false"`
	MaxTokens     int                `json:"max_tokens" minimum:"1"`
	System        ContentParts       `json:"system,omitempty" doc:"A string or an array of text blocks."`
	Stream        bool               `json:"stream,omitempty" doc:"Answer with named text/event-stream events (message_start, content_block_start, content_block_delta, content_block_stop, message_delta, message_stop, ping, error)."`
	Temperature   *float64           `json:"temperature,omitempty" minimum:"0"`
	TopP          *float64           `json:"top_p,omitempty"`
	TopK          *int               `json:"top_k,omitempty"`
	StopSequences []string           `json:"stop_sequences,omitempty"`
	Tools         []AnthropicTool    `json:"tools,omitempty"`
	ToolChoice    AnyJSON            `json:"tool_choice,omitempty"`
	Thinking      AnyJSON            `json:"thinking,omitempty"`
	Metadata      Object             `json:"metadata,omitempty"`
}

// AnthropicUsage is the token accounting of a Messages response.
type AnthropicUsage struct {
	_                        struct{} `additionalProperties:"true"`
	InputTokens              int      `json:"input_tokens"`
	OutputTokens             int      `json:"output_tokens"`
	CacheCreationInputTokens *int     `json:"cache_creation_input_tokens,omitempty" nullable:"true"`
	CacheReadInputTokens     *int     `json:"cache_read_input_tokens,omitempty" nullable:"true"`
}

// Message is the POST /v1/messages 200 body (stream false).
type Message struct {
	_            struct{}       `additionalProperties:"true"`
	ID           string         `json:"id"`
	Type         string         `json:"type" enum:"message"`
	Role         string         `json:"role" enum:"assistant"`
	Model        string         `json:"model"`
	Content      []ContentPart  `json:"content" nullable:"false"`
	StopReason   *string        `json:"stop_reason" nullable:"true" example:"end_turn" doc:"end_turn, max_tokens, stop_sequence, tool_use."`
	StopSequence *string        `json:"stop_sequence,omitempty" nullable:"true"`
	Usage        AnthropicUsage `json:"usage"`
}

// MessageStreamEvent is the JSON of one streamed Messages event; its type repeats the SSE
// event name, and the other fields depend on it.
type MessageStreamEvent struct {
	_     struct{} `additionalProperties:"true"`
	Type  string   `json:"type" enum:"message_start,content_block_start,content_block_delta,content_block_stop,message_delta,message_stop,ping,error"`
	Index *int     `json:"index,omitempty"`
	Delta Object   `json:"delta,omitempty"`
	Msg   *Message `json:"message,omitempty" doc:"The message so far (message_start)."`
	Usage *AnyJSON `json:"usage,omitempty"`
	Block *AnyJSON `json:"content_block,omitempty"`
	Error AnyJSON  `json:"error,omitempty"`
}

// CountTokensRequest is the POST /v1/messages/count_tokens body: a Messages request without
// the generation parameters.
type CountTokensRequest struct {
	_        struct{}           `additionalProperties:"true"`
	Model    string             `json:"model" example:"Qwen/Qwen3-8B"`
	Messages []AnthropicMessage `json:"messages" minItems:"1" nullable:"false"`
	System   ContentParts       `json:"system,omitempty"`
	Tools    []AnthropicTool    `json:"tools,omitempty"`
}

// CountTokensResponse is the POST /v1/messages/count_tokens 200 body.
type CountTokensResponse struct {
	_           struct{} `additionalProperties:"true"`
	InputTokens int      `json:"input_tokens" doc:"Prompt tokens the request would use."`
}
