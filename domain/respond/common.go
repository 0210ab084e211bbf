package respond

import (
	"encoding/json"
	"sort"
	"strings"
	"unicode/utf8"
)

// Vocab turns token ids into their raw bytes, for logprob "token" and "bytes" fields.
// *text.Tokenizer implements it.
type Vocab interface {
	AppendBytes(dst []byte, ids []uint32, skipSpecialTokens bool) []byte
}

// TopLogprob is one alternative the engine reported for a position.
type TopLogprob struct {
	TokenID uint32
	Logprob float64
}

// Logprob is one generated token's log probability and its alternatives (engine
// OutputLogProbs: token_logprobs, token_ids, top_logprobs; smg-spec.md §9.1).
type Logprob struct {
	TokenID uint32
	Logprob float64
	Top     []TopLogprob
}

// PromptLogprob is one prompt token's logprob (engine InputLogProbs: token_ids and
// InputTokenLogProb values); Logprob is nil where the engine has none (the first token).
type PromptLogprob struct {
	TokenID uint32
	Logprob *float64
}

// Finish is how the engine ended a sample (GenerateComplete.finish_reason and matched_stop),
// after the gateway's own stop trimming.
type Finish struct {
	// Reason is "stop", "length" or "abort" (engine words).
	Reason string
	// MatchedTokenID or MatchedStop is what stopped the sample, if known.
	MatchedTokenID *uint32
	MatchedStop    *string
	// AbortMessage explains an abort.
	AbortMessage string
}

// Usage is the token accounting of a whole request (all samples).
type Usage struct {
	PromptTokens, CompletionTokens, CachedTokens, ReasoningTokens int
}

// Sample is one finished choice: the decoded text (stop strings trimmed) and what the parsers
// made of it.
type Sample struct {
	Index int
	// Text is the whole decoded output (completions and /generate show it as is).
	Text string
	// Content, Reasoning and ToolCalls are Text after the reasoning and tool parsers (chat,
	// messages, responses). With no parser, Content == Text.
	Content   string
	Reasoning string
	ToolCalls []ToolCall
	Finish    Finish
	Logprobs  []Logprob
	// PromptLogprobs are the prompt's logprobs as its prefill computed them (/generate
	// return_logprob); nil = not asked for.
	PromptLogprobs []PromptLogprob
	OutputIDs      []uint32
	// CompletionTokens is this sample's generated token count.
	CompletionTokens int
}

// SortSamples orders samples by Index (n>1 samples arrive in any order and merge by index).
func SortSamples(s []Sample) {
	sort.SliceStable(s, func(i, j int) bool { return s[i].Index < s[j].Index })
}

// Meta is what every response of one request shares.
type Meta struct {
	// ID is the response id ("chatcmpl-…", "cmpl-…", "msg_…", "resp_…", or the rid).
	ID string
	// Model is the model name to echo.
	Model string
	// Created is the Unix time in seconds.
	Created int64
}

func marshal(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		// Only values built here are marshalled; a failure is a programming error.
		panic("respond: marshal: " + err.Error())
	}
	return b
}

// sseData frames one JSON payload as an unnamed SSE event (OpenAI style).
func sseData(v any) []byte {
	b := marshal(v)
	out := make([]byte, 0, len(b)+8)
	out = append(out, "data: "...)
	out = append(out, b...)
	return append(out, '\n', '\n')
}

// sseEvent frames one JSON payload as a named SSE event (Anthropic and Responses style).
func sseEvent(name string, v any) []byte {
	b := marshal(v)
	out := make([]byte, 0, len(b)+len(name)+16)
	out = append(out, "event: "...)
	out = append(out, name...)
	out = append(out, "\ndata: "...)
	out = append(out, b...)
	return append(out, '\n', '\n')
}

// DoneEvent ends an OpenAI-style stream.
var DoneEvent = []byte("data: [DONE]\n\n")

// tokenString is a token's text for logprobs: its bytes as a string, invalid UTF-8 (a token
// that is part of a character) shown as U+FFFD per byte, as OpenAI does.
func tokenString(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	return strings.ToValidUTF8(string(b), "\uFFFD")
}

// chatLogprobToken is one entry of OpenAI chat logprobs.content.
type chatLogprobToken struct {
	Token       string           `json:"token"`
	Logprob     float64          `json:"logprob"`
	Bytes       []int            `json:"bytes"`
	TopLogprobs []chatTopLogprob `json:"top_logprobs"`
}

type chatTopLogprob struct {
	Token   string  `json:"token"`
	Logprob float64 `json:"logprob"`
	Bytes   []int   `json:"bytes"`
}

type chatLogprobs struct {
	Content []chatLogprobToken `json:"content"`
}

func tokenBytes(v Vocab, id uint32) ([]byte, []int) {
	b := v.AppendBytes(nil, []uint32{id}, false)
	ints := make([]int, len(b))
	for i, c := range b {
		ints[i] = int(c)
	}
	return b, ints
}

// chatLogprobsOf renders engine logprobs in OpenAI chat's shape; nil when there are none.
func chatLogprobsOf(v Vocab, lps []Logprob) *chatLogprobs {
	if len(lps) == 0 || v == nil {
		return nil
	}
	out := &chatLogprobs{Content: make([]chatLogprobToken, 0, len(lps))}
	for _, lp := range lps {
		b, ints := tokenBytes(v, lp.TokenID)
		e := chatLogprobToken{Token: tokenString(b), Logprob: lp.Logprob, Bytes: ints, TopLogprobs: []chatTopLogprob{}}
		for _, t := range lp.Top {
			tb, tints := tokenBytes(v, t.TokenID)
			e.TopLogprobs = append(e.TopLogprobs, chatTopLogprob{Token: tokenString(tb), Logprob: t.Logprob, Bytes: tints})
		}
		out.Content = append(out.Content, e)
	}
	return out
}

// completionLogprobs is the legacy completions logprobs shape.
type completionLogprobs struct {
	Tokens        []string             `json:"tokens"`
	TokenLogprobs []float64            `json:"token_logprobs"`
	TopLogprobs   []map[string]float64 `json:"top_logprobs"`
	TextOffset    []int                `json:"text_offset"`
}

func completionLogprobsOf(v Vocab, lps []Logprob, offset int) *completionLogprobs {
	if len(lps) == 0 || v == nil {
		return nil
	}
	out := &completionLogprobs{}
	for _, lp := range lps {
		b, _ := tokenBytes(v, lp.TokenID)
		tok := tokenString(b)
		out.Tokens = append(out.Tokens, tok)
		out.TokenLogprobs = append(out.TokenLogprobs, lp.Logprob)
		top := map[string]float64{}
		for _, t := range lp.Top {
			tb, _ := tokenBytes(v, t.TokenID)
			top[tokenString(tb)] = t.Logprob
		}
		out.TopLogprobs = append(out.TopLogprobs, top)
		out.TextOffset = append(out.TextOffset, offset)
		offset += len(b)
	}
	return out
}

// openAIFinish maps an engine finish to OpenAI's finish_reason: parsed tool calls make
// "tool_calls"; "stop", "length" and "abort" pass through.
func openAIFinish(f Finish, toolCalls bool) string {
	if toolCalls && f.Reason != "length" {
		return "tool_calls"
	}
	if f.Reason == "" {
		return "stop"
	}
	return f.Reason
}

// matchedStop is SGLang/SMG's matched_stop value: the token id or string, else null.
func matchedStop(f Finish) any {
	switch {
	case f.MatchedTokenID != nil:
		return *f.MatchedTokenID
	case f.MatchedStop != nil:
		return *f.MatchedStop
	}
	return nil
}

type openAIUsage struct {
	PromptTokens            int                 `json:"prompt_tokens"`
	CompletionTokens        int                 `json:"completion_tokens"`
	TotalTokens             int                 `json:"total_tokens"`
	PromptTokensDetails     *promptDetails      `json:"prompt_tokens_details,omitempty"`
	CompletionTokensDetails *completionsDetails `json:"completion_tokens_details,omitempty"`
}

type promptDetails struct {
	CachedTokens int `json:"cached_tokens"`
}

type completionsDetails struct {
	ReasoningTokens int `json:"reasoning_tokens"`
}

func openAIUsageOf(u Usage) *openAIUsage {
	out := &openAIUsage{PromptTokens: u.PromptTokens, CompletionTokens: u.CompletionTokens,
		TotalTokens: u.PromptTokens + u.CompletionTokens, PromptTokensDetails: &promptDetails{CachedTokens: u.CachedTokens}}
	if u.ReasoningTokens > 0 {
		out.CompletionTokensDetails = &completionsDetails{ReasoningTokens: u.ReasoningTokens}
	}
	return out
}
