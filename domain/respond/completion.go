package respond

// OpenAI legacy completions (POST /v1/completions) built by the gateway.

type completionChoice struct {
	Index        int                 `json:"index"`
	Text         string              `json:"text"`
	Logprobs     *completionLogprobs `json:"logprobs"`
	FinishReason *string             `json:"finish_reason"`
	MatchedStop  any                 `json:"matched_stop,omitempty"`
}

type completionBody struct {
	ID      string             `json:"id"`
	Object  string             `json:"object"`
	Created int64              `json:"created"`
	Model   string             `json:"model"`
	Choices []completionChoice `json:"choices"`
	Usage   *openAIUsage       `json:"usage,omitempty"`
}

// Completion is the non-streaming text_completion body: one choice per sample (index order)
// with the raw decoded text; echo prepends the prompt text to each.
func Completion(m Meta, samples []Sample, u Usage, v Vocab, echo string) []byte {
	SortSamples(samples)
	body := completionBody{ID: m.ID, Object: "text_completion", Created: m.Created, Model: m.Model, Usage: openAIUsageOf(u)}
	for _, s := range samples {
		reason := openAIFinish(s.Finish, false)
		body.Choices = append(body.Choices, completionChoice{Index: s.Index, Text: echo + s.Text,
			Logprobs: completionLogprobsOf(v, s.Logprobs, len(echo)), FinishReason: &reason, MatchedStop: matchedStop(s.Finish)})
	}
	return marshal(body)
}

// CompletionStream writes text_completion SSE chunks, then Usage (optional) and DoneEvent.
type CompletionStream struct {
	meta   Meta
	vocab  Vocab
	offset map[int]int
	head   []byte // chunkHead, built at the first text-only delta
}

// NewCompletionStream starts a stream; v renders logprobs (nil when none were asked).
func NewCompletionStream(m Meta, v Vocab) *CompletionStream {
	return &CompletionStream{meta: m, vocab: v, offset: map[int]int{}}
}

func (s *CompletionStream) chunk(c []completionChoice, u *openAIUsage) []byte {
	return sseData(completionBody{ID: s.meta.ID, Object: "text_completion", Created: s.meta.Created, Model: s.meta.Model, Choices: c, Usage: u})
}

// Delta returns the event for new text of choice index (nil when there is nothing to send).
func (s *CompletionStream) Delta(index int, text string, lps []Logprob) []byte {
	if text == "" && len(lps) == 0 {
		return nil
	}
	lp := completionLogprobsOf(s.vocab, lps, s.offset[index])
	s.offset[index] += len(text)
	if lp == nil { // text only: the common event, written without reflection
		if s.head == nil {
			s.head = chunkHead(s.meta, "text_completion")
		}
		return textChunk(s.head, index, `,"text":`, text, `,"logprobs":null,"finish_reason":null}]}`+"\n\n")
	}
	return s.chunk([]completionChoice{{Index: index, Text: text, Logprobs: lp}}, nil)
}

// Finish returns the final event of choice index.
func (s *CompletionStream) Finish(index int, f Finish) []byte {
	reason := openAIFinish(f, false)
	return s.chunk([]completionChoice{{Index: index, FinishReason: &reason, MatchedStop: matchedStop(f)}}, nil)
}

// Usage returns the usage chunk (choices: []).
func (s *CompletionStream) Usage(u Usage) []byte {
	return s.chunk([]completionChoice{}, openAIUsageOf(u))
}
