package respond

// OpenAI chat completions built by the gateway (POST /v1/chat/completions on gRPC workers).

type chatToolCall struct {
	Index    *int         `json:"index,omitempty"`
	ID       string       `json:"id,omitempty"`
	Type     string       `json:"type,omitempty"`
	Function chatFunction `json:"function"`
}

type chatFunction struct {
	Name      string `json:"name,omitempty"`
	Arguments string `json:"arguments"`
}

type chatMessage struct {
	Role             string         `json:"role"`
	Content          *string        `json:"content"`
	ReasoningContent *string        `json:"reasoning_content,omitempty"`
	ToolCalls        []chatToolCall `json:"tool_calls,omitempty"`
}

type chatChoice struct {
	Index        int           `json:"index"`
	Message      chatMessage   `json:"message"`
	Logprobs     *chatLogprobs `json:"logprobs"`
	FinishReason string        `json:"finish_reason"`
	MatchedStop  any           `json:"matched_stop"`
}

type chatCompletion struct {
	ID      string       `json:"id"`
	Object  string       `json:"object"`
	Created int64        `json:"created"`
	Model   string       `json:"model"`
	Choices []chatChoice `json:"choices"`
	Usage   *openAIUsage `json:"usage"`
}

func strPtr(s string) *string { return &s }

func chatToolCalls(calls []ToolCall, withIndex bool, first int) []chatToolCall {
	out := make([]chatToolCall, 0, len(calls))
	for i, c := range calls {
		tc := chatToolCall{ID: c.ID, Type: "function", Function: chatFunction{Name: c.Name, Arguments: c.Arguments}}
		if withIndex {
			idx := first + i
			tc.Index = &idx
		}
		out = append(out, tc)
	}
	return out
}

// ChatCompletion is the non-streaming body: one choice per sample in index order, content null
// when the sample only called tools, reasoning_content when a reasoning parser found any,
// logprobs when the engine returned them (v may be nil otherwise), usage over all samples.
func ChatCompletion(m Meta, samples []Sample, u Usage, v Vocab) []byte {
	SortSamples(samples)
	resp := chatCompletion{ID: m.ID, Object: "chat.completion", Created: m.Created, Model: m.Model,
		Choices: make([]chatChoice, 0, len(samples)), Usage: openAIUsageOf(u)}
	for _, s := range samples {
		msg := chatMessage{Role: "assistant", Content: strPtr(s.Content)}
		if s.Content == "" && len(s.ToolCalls) > 0 {
			msg.Content = nil
		}
		if s.Reasoning != "" {
			msg.ReasoningContent = strPtr(s.Reasoning)
		}
		if len(s.ToolCalls) > 0 {
			msg.ToolCalls = chatToolCalls(s.ToolCalls, false, 0)
		}
		resp.Choices = append(resp.Choices, chatChoice{Index: s.Index, Message: msg, Logprobs: chatLogprobsOf(v, s.Logprobs),
			FinishReason: openAIFinish(s.Finish, len(s.ToolCalls) > 0), MatchedStop: matchedStop(s.Finish)})
	}
	return marshal(resp)
}

type chatDelta struct {
	Role             string         `json:"role,omitempty"`
	Content          *string        `json:"content,omitempty"`
	ReasoningContent *string        `json:"reasoning_content,omitempty"`
	ToolCalls        []chatToolCall `json:"tool_calls,omitempty"`
}

type chatChunkChoice struct {
	Index        int           `json:"index"`
	Delta        chatDelta     `json:"delta"`
	Logprobs     *chatLogprobs `json:"logprobs"`
	FinishReason *string       `json:"finish_reason"`
	MatchedStop  any           `json:"matched_stop,omitempty"`
}

type chatChunk struct {
	ID      string            `json:"id"`
	Object  string            `json:"object"`
	Created int64             `json:"created"`
	Model   string            `json:"model"`
	Choices []chatChunkChoice `json:"choices"`
	Usage   *openAIUsage      `json:"usage,omitempty"`
}

// ChatStream writes a chat completion as chat.completion.chunk SSE events. The first event of
// each choice carries role "assistant"; tool calls are numbered per choice; Finish sends the
// finish_reason; Usage (when the client asked with stream_options.include_usage) sends the
// choices-less usage chunk; then DoneEvent. Not safe for concurrent use.
type ChatStream struct {
	meta      Meta
	vocab     Vocab
	started   map[int]bool
	toolCount map[int]int
	head      []byte // chunkHead, built at the first content-only delta
}

// NewChatStream starts a stream; v renders logprobs (nil when none were asked).
func NewChatStream(m Meta, v Vocab) *ChatStream {
	return &ChatStream{meta: m, vocab: v, started: map[int]bool{}, toolCount: map[int]int{}}
}

func (s *ChatStream) chunk(choices []chatChunkChoice, u *openAIUsage) []byte {
	return sseData(chatChunk{ID: s.meta.ID, Object: "chat.completion.chunk", Created: s.meta.Created, Model: s.meta.Model, Choices: choices, Usage: u})
}

// Delta returns the events for one step of choice index (nil when d and lps are empty and the
// choice has already started).
func (s *ChatStream) Delta(index int, d Delta, lps []Logprob) []byte {
	var out []byte
	if !s.started[index] {
		s.started[index] = true
		out = append(out, s.chunk([]chatChunkChoice{{Index: index, Delta: chatDelta{Role: "assistant", Content: strPtr("")}}}, nil)...)
	}
	if d.Empty() && len(lps) == 0 {
		return out
	}
	lp := chatLogprobsOf(s.vocab, lps)
	if lp == nil && d.Content != "" && d.Reasoning == "" && len(d.ToolCalls) == 0 { // content only: the common event, written without reflection
		if s.head == nil {
			s.head = chunkHead(s.meta, "chat.completion.chunk")
		}
		ev := textChunk(s.head, index, `,"delta":{"content":`, d.Content, `},"logprobs":null,"finish_reason":null}]}`+"\n\n")
		if out == nil {
			return ev
		}
		return append(out, ev...)
	}
	cd := chatDelta{}
	if d.Reasoning != "" {
		cd.ReasoningContent = strPtr(d.Reasoning)
	}
	if d.Content != "" {
		cd.Content = strPtr(d.Content)
	}
	if len(d.ToolCalls) > 0 {
		cd.ToolCalls = chatToolCalls(d.ToolCalls, true, s.toolCount[index])
		s.toolCount[index] += len(d.ToolCalls)
	}
	return append(out, s.chunk([]chatChunkChoice{{Index: index, Delta: cd, Logprobs: lp}}, nil)...)
}

// Finish returns the final event of choice index.
func (s *ChatStream) Finish(index int, f Finish) []byte {
	out := s.Delta(index, Delta{}, nil)
	reason := openAIFinish(f, s.toolCount[index] > 0)
	return append(out, s.chunk([]chatChunkChoice{{Index: index, Delta: chatDelta{}, FinishReason: &reason, MatchedStop: matchedStop(f)}}, nil)...)
}

// Usage returns the usage chunk (choices: []).
func (s *ChatStream) Usage(u Usage) []byte {
	return s.chunk([]chatChunkChoice{}, openAIUsageOf(u))
}
