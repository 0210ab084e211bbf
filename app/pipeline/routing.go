package pipeline

import (
	"encoding/json"

	"github.com/smg-go/smg/app/dispatch"
	"github.com/smg-go/smg/domain/handoff"
	"github.com/smg-go/smg/domain/text"
)

var _ dispatch.RoutingTokenizer = (*Pipeline)(nil)

// RoutingTokens are the prompt token ids of a single-prompt chat, messages, responses,
// completions or /generate request, computed as prepare does (chat template, add_special_tokens
// false), for cache_aware to match against the engines' KV events before selection. nil
// when the body names no model, a text prompt's tokenizer is not loaded yet (the first
// requests of a model route approximately while prepare loads it), the request is a
// batch, or anything fails: prepare reports the error on the attempt. The prompt is
// tokenized again by prepare on the selected pair.
func (pl *Pipeline) RoutingTokens(rq *handoff.Request) []uint32 {
	var b clientBody
	if json.Unmarshal(rq.Body.Bytes(), &b) != nil || b.Model == "" {
		return nil
	}
	switch rq.Route {
	case handoff.RouteCompletions:
		if ps, batch, ok := idList(b.Prompt); ok {
			if batch {
				return nil
			}
			return ps[0].ids
		}
	case handoff.RouteGenerate:
		if len(b.InputIDs) > 0 {
			return b.InputIDs
		}
	}
	m := pl.text.Loaded(b.Model)
	if m == nil {
		return nil
	}
	switch rq.Route {
	case handoff.RouteChat:
		if checkMessages(b.Messages) != nil {
			return nil
		}
		_, ids, err := m.ChatPrompt(text.ChatInput{Messages: b.Messages, Tools: b.Tools, AddGenerationPrompt: true, TemplateKwargs: b.ChatTemplateKwargs})
		if err != nil {
			return nil
		}
		return ids
	case handoff.RouteMessages, handoff.RouteResponses:
		conv := text.FromAnthropic
		if rq.Route == handoff.RouteResponses {
			conv = text.FromResponses
		}
		in, err := conv(rq.Body.Bytes())
		if err != nil {
			return nil
		}
		_, ids, err := m.ChatPrompt(in)
		if err != nil {
			return nil
		}
		return ids
	case handoff.RouteCompletions:
		return single(m, b.Prompt)
	case handoff.RouteGenerate:
		return single(m, b.Text)
	}
	return nil
}

// single tokenizes a prompt field holding one string; nil for a batch or another shape.
func single(m *text.Model, raw json.RawMessage) []uint32 {
	ps, batch, err := textList(raw, "prompt")
	if err != nil || batch {
		return nil
	}
	return m.Tokenizer.Encode(ps[0], false)
}
