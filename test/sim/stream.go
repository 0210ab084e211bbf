package sim

import (
	"context"
	"encoding/json"
	"net/http"
)

// Streaming responses: SSE, one event per output token (per item), flushed immediately.
// OpenAI routes and /generate end with `data: [DONE]`; /v1/messages and /v1/responses use
// named events (Anthropic / OpenAI Responses style) and no [DONE]. /generate chunks carry
// cumulative text and output_ids (SGLang's default, non-incremental streaming output).

type chatDelta struct {
	Role    string `json:"role,omitempty"`
	Content string `json:"content"`
}

type chatChunkChoice struct {
	Index        int           `json:"index"`
	Delta        chatDelta     `json:"delta"`
	Logprobs     *chatLogprobs `json:"logprobs"`
	FinishReason *string       `json:"finish_reason"`
}

type complChunkChoice struct {
	Index        int            `json:"index"`
	Text         string         `json:"text"`
	Logprobs     *complLogprobs `json:"logprobs"`
	FinishReason *string        `json:"finish_reason"`
}

var lengthReason = "length"

// failGenerating answers a streaming request that failed while generating as vLLM does
// (vllm/entrypoints/openai chat and completion stream generators): a 200 head, on chat the
// role-only chunk of every choice, then the error event (GenerationError, code 500) and
// [DONE].
func (s *Server) failGenerating(o *out, j *job, res *output, e *reqError) {
	if !o.head() {
		o.fail(errClientGone)
		return
	}
	if j.route == routeChat {
		cs := make([]chatChunkChoice, len(j.items))
		for i := range cs {
			cs[i] = chatChunkChoice{Index: i, Delta: chatDelta{Role: "assistant"}}
		}
		b, _ := json.Marshal(openAIResp{ID: "chatcmpl-" + res.id, Object: "chat.completion.chunk", Created: res.created, Model: res.model, Choices: cs})
		if !o.event("", b) {
			o.fail(errClientGone)
			return
		}
	}
	o.fail(e)
}

// stream writes j's output as SSE. dieAfter ≥ 0 cuts the connection after that many token
// steps. It returns errClientGone when the client went away.
func (s *Server) stream(ctx context.Context, o *out, j *job, res *output, dieAfter int) *reqError {
	ids := make([][]int32, len(j.items))
	for i := range j.items {
		ids[i] = outIDs(&j.items[i], res.n)
	}
	cum := make([][]byte, len(j.items))
	steps := max(res.n, 1)
	send := func(v any) bool {
		b, _ := json.Marshal(v)
		return o.event("", b)
	}
	named := func(name string, v any) bool {
		b, _ := json.Marshal(v)
		return o.event(name, b)
	}
	chunk := func(choices any) openAIResp {
		obj := "chat.completion.chunk"
		prefix := "chatcmpl-"
		if j.route == routeCompletions {
			obj, prefix = "text_completion", "cmpl-"
		}
		return openAIResp{ID: prefix + res.id, Object: obj, Created: res.created, Model: res.model, Choices: choices}
	}
	// preamble
	switch j.route {
	case routeChat:
		cs := make([]chatChunkChoice, len(j.items))
		for i := range cs {
			cs[i] = chatChunkChoice{Index: i, Delta: chatDelta{Role: "assistant"}}
		}
		if !send(chunk(cs)) {
			return errClientGone
		}
	case routeMessages:
		u := usageOf(j, res)
		if !named("message_start", map[string]any{"type": "message_start", "message": msgResp{ID: "msg_" + res.id,
			Type: "message", Role: "assistant", Model: res.model, Content: []textBlock{},
			Usage: msgUsage{InputTokens: u.PromptTokens}}}) ||
			!named("content_block_start", map[string]any{"type": "content_block_start", "index": 0,
				"content_block": textBlock{Type: "text"}}) {
			return errClientGone
		}
	case routeResponses:
		r := respObject(j, res, "", "in_progress")
		r.Output = []respOutput{}
		if !named("response.created", map[string]any{"type": "response.created", "response": r}) {
			return errClientGone
		}
	}
	for k := 0; k < steps; k++ {
		if k == dieAfter {
			panic(http.ErrAbortHandler)
		}
		if k > 0 && !s.sleep(ctx, s.itl()) {
			return errClientGone
		}
		last := k == steps-1
		var fin *string
		if last {
			fin = &lengthReason
		}
		word := func(i int) string {
			if k >= res.n {
				return ""
			}
			return wordOf(ids[i][k])
		}
		tokIDs := func(i int) []int32 { return ids[i][k:min(k+1, res.n)] }
		ok := true
		switch j.route {
		case routeChat:
			cs := make([]chatChunkChoice, len(j.items))
			for i := range cs {
				cs[i] = chatChunkChoice{Index: i, Delta: chatDelta{Content: word(i)}, FinishReason: fin}
				if j.logprobs {
					cs[i].Logprobs = chatLP(tokIDs(i), j.topLP)
				}
			}
			ok = send(chunk(cs))
		case routeCompletions:
			cs := make([]complChunkChoice, len(j.items))
			for i := range cs {
				cs[i] = complChunkChoice{Index: i, Text: word(i), FinishReason: fin}
				if j.logprobs {
					cs[i].Logprobs = complLP(tokIDs(i), j.topLP)
				}
			}
			ok = send(chunk(cs))
		case routeGenerate:
			for i := range j.items {
				cum[i] = append(cum[i], word(i)...)
				ok = ok && send(genItem(j, res, i, ids[i][:min(k+1, res.n)], last, string(cum[i])))
			}
		case routeMessages:
			if k < res.n {
				ok = named("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0,
					"delta": map[string]string{"type": "text_delta", "text": word(0)}})
			}
		case routeResponses:
			if k < res.n {
				ok = named("response.output_text.delta", map[string]any{"type": "response.output_text.delta",
					"item_id": "msg_" + res.id, "output_index": 0, "content_index": 0, "delta": word(0)})
			}
		}
		if !ok {
			return errClientGone
		}
		if k < res.n {
			s.c.genTokens.Add(int64(len(j.items)))
		}
	}
	ok := true
	switch j.route {
	case routeChat, routeCompletions:
		if j.usageInSt {
			c := chunk([]any{})
			u := usageOf(j, res)
			c.Usage = &u
			ok = send(c)
		}
		ok = ok && o.done()
	case routeGenerate:
		ok = o.done()
	case routeMessages:
		ok = named("content_block_stop", map[string]any{"type": "content_block_stop", "index": 0}) &&
			named("message_delta", map[string]any{"type": "message_delta",
				"delta": map[string]any{"stop_reason": "max_tokens", "stop_sequence": nil},
				"usage": map[string]int{"output_tokens": res.n}}) &&
			named("message_stop", map[string]any{"type": "message_stop"})
	case routeResponses:
		full := textOf(ids[0])
		ok = named("response.completed", map[string]any{"type": "response.completed",
			"response": respObject(j, res, full, "completed")})
	}
	if !ok {
		return errClientGone
	}
	return nil
}
