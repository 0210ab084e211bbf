package pipeline

import (
	"context"
	"encoding/json"
	"time"

	"github.com/smg-go/smg/app/dispatch"
	"github.com/smg-go/smg/domain/handoff"
	"github.com/smg-go/smg/domain/text"
)

var _ dispatch.RoutingTokenizer = (*Pipeline)(nil)

// warmEvery is the least time between two background tokenizer loads of one model.
const warmEvery = 10 * time.Second

// warmTokenizer starts loading model's tokenizer from --tokenizer-path / --model-path in
// the background (at most once per warmEvery), so a fleet of HTTP workers, whose requests
// never go through prepare, gets its prompts tokenized before selection once it is loaded.
// Nothing to load from: nothing happens, and those requests route approximately.
func (pl *Pipeline) warmTokenizer(model string) {
	src := text.WorkerSources(nil, pl.cfg.TokenizerPath, pl.cfg.ModelPath)
	if len(src) == 0 {
		return
	}
	now := time.Now()
	if v, ok := pl.warming.Load(model); ok && now.Sub(v.(time.Time)) < warmEvery {
		return
	}
	pl.warming.Store(model, now)
	pl.bg.Add(1)
	go func() {
		defer pl.bg.Done()
		ctx, cancel := context.WithTimeout(context.Background(), text.LoadTimeout)
		defer cancel()
		go func() {
			select {
			case <-pl.closing:
				cancel()
			case <-ctx.Done():
			}
		}()
		if _, err := pl.text.Get(ctx, model, src, nil); err != nil {
			pl.log.Warn("kv routing: no tokenizer for the model yet, its prompts route approximately", "model", model, "err", err)
		}
	}()
}

// RoutingTokens are the prompt token ids of a single-prompt chat, messages, responses,
// completions or /generate request, computed as prepare does (chat template, add_special_tokens
// false), for cache_aware to match against the engines' KV events before selection. nil
// when the body names no model, a text prompt's tokenizer is not loaded yet (the first
// requests of a model route approximately while prepare loads it), the request is a
// batch, or anything fails: prepare reports the error on the attempt. The prompt is
// tokenized again by prepare on the selected pair. A model whose tokenizer is not loaded
// starts loading from --tokenizer-path / --model-path (warmTokenizer): HTTP workers'
// requests never load it otherwise.
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
		pl.warmTokenizer(b.Model)
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
