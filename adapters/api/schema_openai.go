package api

// OpenAI-compatible request and response shapes (the fields SGLang, vLLM and TokenSpeed
// accept and return on their OpenAI routes). Every object allows additional properties:
// engines accept extra fields (SGLang's and vLLM's sampling extensions such as top_k,
// min_p, ignore_eos, chat_template_kwargs), and the gateway relays them untouched.

// ChatMessage is one message of a chat conversation.
type ChatMessage struct {
	_          struct{}     `additionalProperties:"true"`
	Role       string       `json:"role" enum:"system,developer,user,assistant,tool" example:"user"`
	Content    ContentParts `json:"content,omitempty" doc:"A string, or an array of content parts; null or absent on an assistant message that only calls tools."`
	Name       string       `json:"name,omitempty"`
	ToolCalls  []ToolCall   `json:"tool_calls,omitempty" doc:"Tool calls of an assistant message."`
	ToolCallID string       `json:"tool_call_id,omitempty" doc:"The call a tool message answers."`
}

// ToolCall is a function call an assistant message (or a stream delta) makes.
type ToolCall struct {
	_        struct{}         `additionalProperties:"true"`
	Index    *int             `json:"index,omitempty" doc:"Position of the call (stream deltas only)."`
	ID       string           `json:"id,omitempty"`
	Type     string           `json:"type,omitempty" enum:"function"`
	Function ToolCallFunction `json:"function"`
}

// ToolCallFunction is the function a ToolCall names, with its arguments as a JSON string.
type ToolCallFunction struct {
	_         struct{} `additionalProperties:"true"`
	Name      string   `json:"name,omitempty"`
	Arguments string   `json:"arguments,omitempty" doc:"JSON-encoded arguments (streamed in fragments)."`
}

// StreamOptions are the options of a streamed OpenAI response.
type StreamOptions struct {
	_            struct{} `additionalProperties:"true"`
	IncludeUsage bool     `json:"include_usage,omitempty" doc:"Send a last chunk with usage."`
}

// ChatCompletionRequest is the POST /v1/chat/completions body.
type ChatCompletionRequest struct {
	_                   struct{}       `additionalProperties:"true"`
	Model               string         `json:"model" doc:"Model id; routes to workers serving it (any worker when the fleet serves one model)." example:"Qwen/Qwen3-8B"`
	Messages            []ChatMessage  `json:"messages" minItems:"1" nullable:"false"`
	Stream              bool           `json:"stream,omitempty" doc:"Answer with text/event-stream chunks (ChatCompletionChunk) ending with data: [DONE]."`
	StreamOptions       *StreamOptions `json:"stream_options,omitempty"`
	MaxTokens           *int           `json:"max_tokens,omitempty" minimum:"1"`
	MaxCompletionTokens *int           `json:"max_completion_tokens,omitempty" minimum:"1"`
	Temperature         *float64       `json:"temperature,omitempty" minimum:"0"`
	TopP                *float64       `json:"top_p,omitempty" minimum:"0" maximum:"1"`
	N                   *int           `json:"n,omitempty" minimum:"1"`
	Stop                StringOrArray  `json:"stop,omitempty"`
	Seed                *int64         `json:"seed,omitempty"`
	PresencePenalty     *float64       `json:"presence_penalty,omitempty"`
	FrequencyPenalty    *float64       `json:"frequency_penalty,omitempty"`
	Logprobs            *bool          `json:"logprobs,omitempty" doc:"Return token logprobs; in PD mode the gateway merges the prefill's prompt logprobs with the decode's."`
	TopLogprobs         *int           `json:"top_logprobs,omitempty" minimum:"0"`
	Tools               []Tool         `json:"tools,omitempty"`
	ToolChoice          AnyJSON        `json:"tool_choice,omitempty" doc:"none, auto, required, or {\"type\":\"function\",\"function\":{\"name\"}}."`
	ResponseFormat      AnyJSON        `json:"response_format,omitempty" doc:"{\"type\":\"text\"|\"json_object\"|\"json_schema\",...}."`
	User                string         `json:"user,omitempty"`
}

// Tool is a tool a chat request offers the model.
type Tool struct {
	_        struct{}     `additionalProperties:"true"`
	Type     string       `json:"type" enum:"function"`
	Function ToolFunction `json:"function"`
}

// ToolFunction is the function a Tool offers; Parameters is its JSON Schema.
type ToolFunction struct {
	_           struct{} `additionalProperties:"true"`
	Name        string   `json:"name"`
	Description string   `json:"description,omitempty"`
	Parameters  Object   `json:"parameters,omitempty" doc:"JSON Schema of the arguments."`
}

// Usage is the token accounting of an OpenAI chat or completions response.
type Usage struct {
	_                struct{} `additionalProperties:"true"`
	PromptTokens     int      `json:"prompt_tokens"`
	CompletionTokens int      `json:"completion_tokens"`
	TotalTokens      int      `json:"total_tokens"`
}

// ChatCompletionMessage is the assistant message of a chat choice.
type ChatCompletionMessage struct {
	_                struct{}   `additionalProperties:"true"`
	Role             string     `json:"role" enum:"assistant"`
	Content          *string    `json:"content" nullable:"true"`
	ReasoningContent *string    `json:"reasoning_content,omitempty" nullable:"true" doc:"Reasoning text split off by the engine's reasoning parser."`
	ToolCalls        []ToolCall `json:"tool_calls,omitempty"`
}

// ChatCompletionChoice is one choice of a chat completion.
type ChatCompletionChoice struct {
	_            struct{}              `additionalProperties:"true"`
	Index        int                   `json:"index"`
	Message      ChatCompletionMessage `json:"message"`
	Logprobs     Object                `json:"logprobs,omitempty" nullable:"true"`
	FinishReason *string               `json:"finish_reason" nullable:"true" example:"stop" doc:"stop, length, tool_calls, content_filter, abort."`
}

// ChatCompletion is the POST /v1/chat/completions 200 body (stream false).
type ChatCompletion struct {
	_       struct{}               `additionalProperties:"true"`
	ID      string                 `json:"id"`
	Object  string                 `json:"object" enum:"chat.completion"`
	Created int64                  `json:"created" doc:"Unix seconds."`
	Model   string                 `json:"model"`
	Choices []ChatCompletionChoice `json:"choices" nullable:"false"`
	Usage   *UsageOrNull           `json:"usage,omitempty" nullable:"true"`
}

// ChatCompletionDelta is the increment a stream chunk carries.
type ChatCompletionDelta struct {
	_                struct{}   `additionalProperties:"true"`
	Role             string     `json:"role,omitempty" enum:"assistant"`
	Content          *string    `json:"content,omitempty" nullable:"true"`
	ReasoningContent *string    `json:"reasoning_content,omitempty" nullable:"true"`
	ToolCalls        []ToolCall `json:"tool_calls,omitempty"`
}

// ChatCompletionChunkChoice is one choice of a stream chunk.
type ChatCompletionChunkChoice struct {
	_            struct{}            `additionalProperties:"true"`
	Index        int                 `json:"index"`
	Delta        ChatCompletionDelta `json:"delta"`
	Logprobs     Object              `json:"logprobs,omitempty" nullable:"true"`
	FinishReason *string             `json:"finish_reason,omitempty" nullable:"true"`
}

// ChatCompletionChunk is the JSON of one `data:` event of a streamed chat completion.
type ChatCompletionChunk struct {
	_       struct{}                    `additionalProperties:"true"`
	ID      string                      `json:"id"`
	Object  string                      `json:"object" enum:"chat.completion.chunk"`
	Created int64                       `json:"created"`
	Model   string                      `json:"model"`
	Choices []ChatCompletionChunkChoice `json:"choices" nullable:"false"`
	Usage   *UsageOrNull                `json:"usage,omitempty" nullable:"true" doc:"On the last chunk with stream_options.include_usage."`
}

// CompletionRequest is the POST /v1/completions body.
type CompletionRequest struct {
	_                struct{}       `additionalProperties:"true"`
	Model            string         `json:"model" example:"Qwen/Qwen3-8B"`
	Prompt           PromptInput    `json:"prompt"`
	Stream           bool           `json:"stream,omitempty" doc:"Answer with text/event-stream chunks (Completion objects) ending with data: [DONE]."`
	StreamOptions    *StreamOptions `json:"stream_options,omitempty"`
	MaxTokens        *int           `json:"max_tokens,omitempty" minimum:"1"`
	Temperature      *float64       `json:"temperature,omitempty" minimum:"0"`
	TopP             *float64       `json:"top_p,omitempty" minimum:"0" maximum:"1"`
	N                *int           `json:"n,omitempty" minimum:"1"`
	Stop             StringOrArray  `json:"stop,omitempty"`
	Seed             *int64         `json:"seed,omitempty"`
	Echo             *bool          `json:"echo,omitempty"`
	Logprobs         *int           `json:"logprobs,omitempty" minimum:"0" doc:"Number of top logprobs per token."`
	Suffix           string         `json:"suffix,omitempty"`
	PresencePenalty  *float64       `json:"presence_penalty,omitempty"`
	FrequencyPenalty *float64       `json:"frequency_penalty,omitempty"`
	User             string         `json:"user,omitempty"`
}

// CompletionChoice is one choice of a text completion (or of a stream chunk).
type CompletionChoice struct {
	_            struct{} `additionalProperties:"true"`
	Index        int      `json:"index"`
	Text         string   `json:"text"`
	Logprobs     Object   `json:"logprobs,omitempty" nullable:"true"`
	FinishReason *string  `json:"finish_reason" nullable:"true" example:"length"`
}

// Completion is the POST /v1/completions 200 body, and each streamed chunk.
type Completion struct {
	_       struct{}           `additionalProperties:"true"`
	ID      string             `json:"id"`
	Object  string             `json:"object" enum:"text_completion"`
	Created int64              `json:"created"`
	Model   string             `json:"model"`
	Choices []CompletionChoice `json:"choices" nullable:"false"`
	Usage   *UsageOrNull       `json:"usage,omitempty" nullable:"true"`
}
