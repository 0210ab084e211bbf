package api

import (
	"reflect"

	"github.com/danielgtaylor/huma/v2"
)

// The Responses API (/v1/responses, proxied to the decode engine's own implementation),
// SGLang's native /generate and the rerank routes. Objects allow additional properties.

// ResponsesRequest is the POST /v1/responses body.
type ResponsesRequest struct {
	_                  struct{} `additionalProperties:"true"`
	Model              string   `json:"model" example:"Qwen/Qwen3-8B"`
	Input              AnyJSON  `json:"input" doc:"A string, or an array of input items (messages, function_call_output, ...)."`
	Instructions       string   `json:"instructions,omitempty"`
	Stream             bool     `json:"stream,omitempty" doc:"Answer with named text/event-stream events (response.created, response.output_text.delta, response.completed, ...)."`
	MaxOutputTokens    *int     `json:"max_output_tokens,omitempty" minimum:"1"`
	Temperature        *float64 `json:"temperature,omitempty" minimum:"0"`
	TopP               *float64 `json:"top_p,omitempty"`
	Tools              AnyJSON  `json:"tools,omitempty"`
	ToolChoice         AnyJSON  `json:"tool_choice,omitempty"`
	Store              *bool    `json:"store,omitempty" doc:"Stored responses live on the decode engine that answered; the gateway serves no GET/DELETE of them (501), so send false."`
	PreviousResponseID string   `json:"previous_response_id,omitempty"`
	Metadata           Object   `json:"metadata,omitempty"`
}

// ResponsesUsage is the token accounting of a Responses answer.
type ResponsesUsage struct {
	_            struct{} `additionalProperties:"true"`
	InputTokens  int      `json:"input_tokens"`
	OutputTokens int      `json:"output_tokens"`
	TotalTokens  int      `json:"total_tokens"`
}

// Response is the POST /v1/responses 200 body (stream false).
type Response struct {
	_         struct{}              `additionalProperties:"true"`
	ID        string                `json:"id"`
	Object    string                `json:"object" enum:"response"`
	CreatedAt int64                 `json:"created_at"`
	Status    string                `json:"status" example:"completed" doc:"completed, incomplete, failed, in_progress, cancelled."`
	Model     string                `json:"model"`
	Output    []Object              `json:"output" nullable:"false" doc:"Output items (message, reasoning, function_call, ...)."`
	Usage     *ResponsesUsageOrNull `json:"usage,omitempty" nullable:"true"`
}

// ResponseStreamEvent is the JSON of one streamed Responses event; type repeats the SSE
// event name.
type ResponseStreamEvent struct {
	_              struct{}  `additionalProperties:"true"`
	Type           string    `json:"type" example:"response.output_text.delta"`
	SequenceNumber *int      `json:"sequence_number,omitempty"`
	Delta          string    `json:"delta,omitempty"`
	Response       *Response `json:"response,omitempty"`
}

// GenerateRequest is the POST /generate body (SGLang's native API).
type GenerateRequest struct {
	_              struct{}      `additionalProperties:"true"`
	Text           StringOrArray `json:"text,omitempty" doc:"Prompt text, or a batch of prompts; exactly one of text and input_ids."`
	InputIDs       AnyJSON       `json:"input_ids,omitempty" doc:"Prompt token ids, or a batch of them."`
	Model          string        `json:"model,omitempty" doc:"Optional; /generate is routed as model unknown when absent."`
	SamplingParams Object        `json:"sampling_params,omitempty" doc:"max_new_tokens, temperature, top_p, top_k, stop, ignore_eos, ..."`
	Stream         bool          `json:"stream,omitempty" doc:"Answer with text/event-stream events (GenerateResult, cumulative text) ending with data: [DONE]."`
	ReturnLogprob  *bool         `json:"return_logprob,omitempty"`
	Rid            AnyJSON       `json:"rid,omitempty" doc:"Request id (or one per batch item)."`
}

// GenerateResult is a /generate answer (one per prompt; a batch answers an array).
type GenerateResult struct {
	_         struct{} `additionalProperties:"true"`
	Text      string   `json:"text"`
	OutputIDs []int    `json:"output_ids,omitempty"`
	MetaInfo  Object   `json:"meta_info" doc:"id, finish_reason, prompt_tokens, completion_tokens, cached_tokens, ..."`
}

// RerankRequest is the POST /v1/rerank (and /rerank) body.
type RerankRequest struct {
	_               struct{} `additionalProperties:"true"`
	Model           string   `json:"model,omitempty" example:"BAAI/bge-reranker-v2-m3"`
	Query           string   `json:"query"`
	Documents       []string `json:"documents" minItems:"1" nullable:"false"`
	TopN            *int     `json:"top_n,omitempty" minimum:"1"`
	ReturnDocuments *bool    `json:"return_documents,omitempty"`
}

// RerankResult is one scored document.
type RerankResult struct {
	_              struct{} `additionalProperties:"true"`
	Index          int      `json:"index" doc:"Position of the document in the request."`
	RelevanceScore *float64 `json:"relevance_score,omitempty" doc:"vLLM/Cohere-style score."`
	Score          *float64 `json:"score,omitempty" doc:"SGLang-style score."`
	Document       AnyJSON  `json:"document,omitempty" doc:"The document (a string, or {\"text\"})."`
}

// GenerateOutput is the /generate 200 body: one GenerateResult, or an array of them for a
// batched prompt.
type GenerateOutput struct{}

// Schema implements huma.SchemaProvider: oneOf GenerateResult, array of GenerateResult.
func (GenerateOutput) Schema(r huma.Registry) *huma.Schema {
	one := r.Schema(reflect.TypeFor[GenerateResult](), true, "GenerateResult")
	return &huma.Schema{OneOf: []*huma.Schema{one, {Type: huma.TypeArray, Items: one}}}
}

// RerankList is the vLLM (Cohere/Jina-style) rerank answer.
type RerankList struct {
	_       struct{}       `additionalProperties:"true"`
	ID      string         `json:"id,omitempty"`
	Model   string         `json:"model,omitempty"`
	Results []RerankResult `json:"results" nullable:"false"`
	Usage   Object         `json:"usage,omitempty"`
}

// RerankOutput is the rerank 200 body: a RerankList (vLLM) or an array of RerankResult
// (SGLang), as the decode engine answers.
type RerankOutput struct{}

// Schema implements huma.SchemaProvider: oneOf RerankList, array of RerankResult.
func (RerankOutput) Schema(r huma.Registry) *huma.Schema {
	return &huma.Schema{OneOf: []*huma.Schema{
		r.Schema(reflect.TypeFor[RerankList](), true, "RerankList"),
		{Type: huma.TypeArray, Items: r.Schema(reflect.TypeFor[RerankResult](), true, "RerankResult")},
	}}
}
