package respond

import "strconv"

// SGLang's native /generate built by the gateway (engines.md §2.2): {"text", "output_ids",
// "meta_info": {"id", "finish_reason", "prompt_tokens", "completion_tokens", "cached_tokens",
// "matched_stop", "output_token_logprobs"}}; a JSON array for n>1.

type generateBody struct {
	Text      string       `json:"text"`
	OutputIDs []uint32     `json:"output_ids"`
	MetaInfo  generateMeta `json:"meta_info"`
	Index     *int         `json:"index,omitempty"`
}

type generateMeta struct {
	ID                  string  `json:"id"`
	FinishReason        any     `json:"finish_reason"`
	PromptTokens        int     `json:"prompt_tokens"`
	CompletionTokens    int     `json:"completion_tokens"`
	CachedTokens        int     `json:"cached_tokens"`
	MatchedStop         any     `json:"matched_stop,omitempty"`
	InputTokenLogprobs  [][]any `json:"input_token_logprobs,omitempty"`
	OutputTokenLogprobs [][]any `json:"output_token_logprobs,omitempty"`
}

// generateFinish is SGLang's finish_reason object: {"type":"stop","matched":…},
// {"type":"length","length":N} or {"type":"abort","message":…}.
func generateFinish(f Finish, completionTokens int) map[string]any {
	switch f.Reason {
	case "length":
		return map[string]any{"type": "length", "length": completionTokens}
	case "abort":
		return map[string]any{"type": "abort", "message": f.AbortMessage}
	}
	return map[string]any{"type": "stop", "matched": matchedStop(f)}
}

// generateLogprobs is SGLang's [[logprob, token_id, text|null], …].
func generateLogprobs(v Vocab, lps []Logprob) [][]any {
	if len(lps) == 0 {
		return nil
	}
	out := make([][]any, 0, len(lps))
	for _, lp := range lps {
		var text any
		if v != nil {
			b, _ := tokenBytes(v, lp.TokenID)
			text = tokenString(b)
		}
		out = append(out, []any{lp.Logprob, lp.TokenID, text})
	}
	return out
}

// promptLogprobs is SGLang's input_token_logprobs: [[logprob|null, token_id, text|null], …].
func promptLogprobs(v Vocab, lps []PromptLogprob) [][]any {
	if len(lps) == 0 {
		return nil
	}
	out := make([][]any, 0, len(lps))
	for _, lp := range lps {
		var text, val any
		if v != nil {
			b, _ := tokenBytes(v, lp.TokenID)
			text = tokenString(b)
		}
		if lp.Logprob != nil {
			val = *lp.Logprob
		}
		out = append(out, []any{val, lp.TokenID, text})
	}
	return out
}

func (g *GenerateStream) body(s Sample, text string, ids []uint32, finish any) generateBody {
	b := generateBody{Text: text, OutputIDs: ids, MetaInfo: generateMeta{ID: g.rid(s.Index), FinishReason: finish,
		PromptTokens: g.usage.PromptTokens, CompletionTokens: len(ids), CachedTokens: g.usage.CachedTokens}}
	if g.n > 1 {
		idx := s.Index
		b.Index = &idx
	}
	return b
}

// Generate is the non-streaming body: an object for one sample, an array for n>1. usage's
// prompt and cached counts are per request; completion counts are per sample.
func Generate(rid string, samples []Sample, u Usage, v Vocab) []byte {
	SortSamples(samples)
	g := &GenerateStream{id: rid, n: len(samples), usage: u}
	bodies := make([]generateBody, 0, len(samples))
	for _, s := range samples {
		b := g.body(s, s.Text, nonNil(s.OutputIDs), generateFinish(s.Finish, s.CompletionTokens))
		b.MetaInfo.CompletionTokens = s.CompletionTokens
		b.MetaInfo.MatchedStop = matchedStop(s.Finish)
		b.MetaInfo.OutputTokenLogprobs = generateLogprobs(v, s.Logprobs)
		b.MetaInfo.InputTokenLogprobs = promptLogprobs(v, s.PromptLogprobs)
		bodies = append(bodies, b)
	}
	if len(bodies) == 1 {
		return marshal(bodies[0])
	}
	return marshal(bodies)
}

func nonNil(ids []uint32) []uint32 {
	if ids == nil {
		return []uint32{}
	}
	return ids
}

// GenerateStream writes /generate SSE events with cumulative text and output_ids (SGLang's
// default, non-incremental streaming output), then DoneEvent.
type GenerateStream struct {
	id    string
	n     int
	usage Usage
	text  map[int]string
	ids   map[int][]uint32
}

// NewGenerateStream starts a stream for n samples; u carries the prompt and cached counts.
func NewGenerateStream(rid string, n int, u Usage) *GenerateStream {
	return &GenerateStream{id: rid, n: n, usage: u, text: map[int]string{}, ids: map[int][]uint32{}}
}

func (g *GenerateStream) rid(index int) string {
	if g.n > 1 {
		return g.id + "-" + itoa(index)
	}
	return g.id
}

// Delta returns the event after new text and ids of sample index.
func (g *GenerateStream) Delta(index int, text string, ids []uint32) []byte {
	g.text[index] += text
	g.ids[index] = append(g.ids[index], ids...)
	return sseData(g.body(Sample{Index: index}, g.text[index], nonNil(g.ids[index]), nil))
}

// Finish returns the last event of sample index, with its finish_reason.
func (g *GenerateStream) Finish(index int, f Finish) []byte {
	ids := nonNil(g.ids[index])
	b := g.body(Sample{Index: index}, g.text[index], ids, generateFinish(f, len(ids)))
	b.MetaInfo.MatchedStop = matchedStop(f)
	return sseData(b)
}

func itoa(i int) string { return strconv.Itoa(i) }
