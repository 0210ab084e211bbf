package wire

// Data-plane routes served through a PD pair (seed "Supported APIs"; smg-spec.md §2.1). Both
// legs are POSTed to the same path, except /rerank which engines serve as /v1/rerank.
const (
	PathGenerate        = "/generate"
	PathChatCompletions = "/v1/chat/completions"
	PathCompletions     = "/v1/completions"
	PathMessages        = "/v1/messages"
	PathResponses       = "/v1/responses"
	PathRerank          = "/v1/rerank"
	PathRerankLegacy    = "/rerank"
	PathCountTokens     = "/v1/messages/count_tokens"
)

// Request body fields the gateway reads (smg-spec.md §2.1 table; engines.md §2.2).
const (
	FieldText             = "text"      // /generate: prompt string (or list = batch)
	FieldInputIDs         = "input_ids" // /generate: token ids, list of lists = batch
	FieldPrompt           = "prompt"    // /v1/completions: string or array
	FieldMessages         = "messages"  // chat, /v1/messages
	FieldContent          = "content"   // a message's content: string or parts
	FieldReasoningContent = "reasoning_content"
	FieldSystem           = "system"          // /v1/messages top-level system prompt
	FieldInput            = "input"           // /v1/responses
	FieldQuery            = "query"           // /v1/rerank
	FieldType             = "type"            // a content part's type ("text", "input_text", ...)
	FieldReturnLogprob    = "return_logprob"  // /generate
	FieldLogprobs         = "logprobs"        // chat (bool), completions (int)
	FieldSamplingParams   = "sampling_params" // /generate: nested sampling options
	FieldMaxNewTokens     = "max_new_tokens"  // /generate: sampling_params output cap
	FieldSeed             = "seed"            // OpenAI routes: sampling seed
	FieldSamplingSeed     = "sampling_seed"   // /generate: sampling_params seed
	FieldRequestID        = "request_id"      // vLLM: body request id
	FieldRID              = "rid"             // SGLang: request id (string or list)
)

// Response body fields the gateway merges (smg-spec.md §2.8.2, §2.9; OpenAI response shape).
const (
	FieldMetaInfo           = "meta_info"
	FieldInputTokenLogprobs = "input_token_logprobs"
	FieldChoices            = "choices"
	FieldIndex              = "index"
	FieldUsage              = "usage"
	FieldPromptTokens       = "prompt_tokens"
	FieldCompletionTokens   = "completion_tokens"
	FieldTotalTokens        = "total_tokens"
	FieldError              = "error"
	FieldMessage            = "message"
	FieldCode               = "code"
)

// SSEDone is the data of the event that ends an OpenAI-style stream: "data: [DONE]"
// (smg-spec.md §2.8.1).
const SSEDone = "[DONE]"
