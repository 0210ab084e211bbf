package respond

// OpenAI Responses API (POST /v1/responses) built by the gateway: output items of type
// "reasoning", "message" (output_text) and "function_call".

type responsesContent struct {
	Type        string `json:"type"`
	Text        string `json:"text"`
	Annotations *[]any `json:"annotations,omitempty"`
}

type responsesItem struct {
	Type      string             `json:"type"`
	ID        string             `json:"id"`
	Status    string             `json:"status,omitempty"`
	Role      string             `json:"role,omitempty"`
	Content   []responsesContent `json:"content,omitempty"`
	Summary   *[]any             `json:"summary,omitempty"`
	CallID    string             `json:"call_id,omitempty"`
	Name      string             `json:"name,omitempty"`
	Arguments *string            `json:"arguments,omitempty"`
}

type responsesUsage struct {
	InputTokens         int            `json:"input_tokens"`
	InputTokensDetails  map[string]int `json:"input_tokens_details"`
	OutputTokens        int            `json:"output_tokens"`
	OutputTokensDetails map[string]int `json:"output_tokens_details"`
	TotalTokens         int            `json:"total_tokens"`
}

type responsesBody struct {
	ID                string            `json:"id"`
	Object            string            `json:"object"`
	CreatedAt         int64             `json:"created_at"`
	Status            string            `json:"status"`
	Model             string            `json:"model"`
	Output            []responsesItem   `json:"output"`
	IncompleteDetails map[string]string `json:"incomplete_details"`
	Usage             *responsesUsage   `json:"usage"`
}

func responsesUsageOf(u Usage) *responsesUsage {
	return &responsesUsage{InputTokens: u.PromptTokens, InputTokensDetails: map[string]int{"cached_tokens": u.CachedTokens},
		OutputTokens: u.CompletionTokens, OutputTokensDetails: map[string]int{"reasoning_tokens": u.ReasoningTokens},
		TotalTokens: u.PromptTokens + u.CompletionTokens}
}

// responsesStatus: a length finish is "incomplete" with reason max_output_tokens.
func responsesStatus(f Finish) (string, map[string]string) {
	if f.Reason == "length" {
		return "incomplete", map[string]string{"reason": "max_output_tokens"}
	}
	return "completed", nil
}

func (m Meta) itemID(kind string, n int) string { return kind + "_" + m.ID + "_" + itoa(n) }

func responsesItems(m Meta, s Sample, status string) []responsesItem {
	var items []responsesItem
	if s.Reasoning != "" {
		items = append(items, responsesItem{Type: "reasoning", ID: m.itemID("rs", len(items)), Summary: &[]any{},
			Content: []responsesContent{{Type: "reasoning_text", Text: s.Reasoning}}})
	}
	if s.Content != "" || len(s.ToolCalls) == 0 {
		items = append(items, responsesItem{Type: "message", ID: m.itemID("msg", len(items)), Status: status, Role: "assistant",
			Content: []responsesContent{{Type: "output_text", Text: s.Content, Annotations: &[]any{}}}})
	}
	for _, c := range s.ToolCalls {
		args := c.Arguments
		items = append(items, responsesItem{Type: "function_call", ID: m.itemID("fc", len(items)), Status: "completed", CallID: c.ID, Name: c.Name, Arguments: &args})
	}
	return items
}

// Response is the non-streaming Responses body for one sample.
func Response(m Meta, s Sample, u Usage) []byte {
	status, incomplete := responsesStatus(s.Finish)
	return marshal(responsesBody{ID: m.ID, Object: "response", CreatedAt: m.Created, Status: status, Model: m.Model,
		Output: responsesItems(m, s, status), IncompleteDetails: incomplete, Usage: responsesUsageOf(u)})
}

// ResponseStream writes the Responses SSE events: response.created, response.in_progress,
// then per output item response.output_item.added, (response.content_part.added,
// response.output_text.delta / response.reasoning_text.delta, the matching .done events,
// response.content_part.done) or response.function_call_arguments.delta/.done, and
// response.output_item.done; finally response.completed (or response.incomplete). Every event
// carries sequence_number. Not safe for concurrent use.
type ResponseStream struct {
	meta  Meta
	seq   int
	open  string // "reasoning" or "message" while an item is open
	items []responsesItem
	text  string
}

// NewResponseStream starts a stream.
func NewResponseStream(m Meta) *ResponseStream { return &ResponseStream{meta: m} }

func (s *ResponseStream) event(typ string, fields map[string]any) []byte {
	fields["type"] = typ
	fields["sequence_number"] = s.seq
	s.seq++
	return sseEvent(typ, fields)
}

func (s *ResponseStream) body(status string, u *responsesUsage, incomplete map[string]string) responsesBody {
	items := s.items
	if items == nil {
		items = []responsesItem{}
	}
	return responsesBody{ID: s.meta.ID, Object: "response", CreatedAt: s.meta.Created, Status: status, Model: s.meta.Model,
		Output: items, IncompleteDetails: incomplete, Usage: u}
}

// Start returns response.created and response.in_progress.
func (s *ResponseStream) Start() []byte {
	out := s.event("response.created", map[string]any{"response": s.body("in_progress", nil, nil)})
	return append(out, s.event("response.in_progress", map[string]any{"response": s.body("in_progress", nil, nil)})...)
}

func (s *ResponseStream) closeItem() []byte {
	if s.open == "" {
		return nil
	}
	n := len(s.items) - 1
	item := &s.items[n]
	var out []byte
	if s.open == "reasoning" {
		item.Content = []responsesContent{{Type: "reasoning_text", Text: s.text}}
		out = s.event("response.reasoning_text.done", map[string]any{"item_id": item.ID, "output_index": n, "content_index": 0, "text": s.text})
	} else {
		item.Status = "completed"
		part := responsesContent{Type: "output_text", Text: s.text, Annotations: &[]any{}}
		item.Content = []responsesContent{part}
		out = s.event("response.output_text.done", map[string]any{"item_id": item.ID, "output_index": n, "content_index": 0, "text": s.text})
		out = append(out, s.event("response.content_part.done", map[string]any{"item_id": item.ID, "output_index": n, "content_index": 0, "part": part})...)
	}
	out = append(out, s.event("response.output_item.done", map[string]any{"output_index": n, "item": *item})...)
	s.open, s.text = "", ""
	return out
}

func (s *ResponseStream) openItem(kind string) []byte {
	out := s.closeItem()
	n := len(s.items)
	var item responsesItem
	if kind == "reasoning" {
		item = responsesItem{Type: "reasoning", ID: s.meta.itemID("rs", n), Summary: &[]any{}}
	} else {
		item = responsesItem{Type: "message", ID: s.meta.itemID("msg", n), Status: "in_progress", Role: "assistant", Content: []responsesContent{}}
	}
	s.items = append(s.items, item)
	s.open = kind
	out = append(out, s.event("response.output_item.added", map[string]any{"output_index": n, "item": item})...)
	if kind == "message" {
		out = append(out, s.event("response.content_part.added", map[string]any{"item_id": item.ID, "output_index": n, "content_index": 0,
			"part": responsesContent{Type: "output_text", Text: "", Annotations: &[]any{}}})...)
	}
	return out
}

// Delta returns the events for one step of output.
func (s *ResponseStream) Delta(d Delta) []byte {
	var out []byte
	for _, part := range []struct{ kind, text, event string }{
		{"reasoning", d.Reasoning, "response.reasoning_text.delta"},
		{"message", d.Content, "response.output_text.delta"},
	} {
		if part.text == "" {
			continue
		}
		if s.open != part.kind {
			out = append(out, s.openItem(part.kind)...)
		}
		s.text += part.text
		n := len(s.items) - 1
		out = append(out, s.event(part.event, map[string]any{"item_id": s.items[n].ID, "output_index": n, "content_index": 0, "delta": part.text})...)
	}
	for _, c := range d.ToolCalls {
		out = append(out, s.closeItem()...)
		n := len(s.items)
		empty, args := "", c.Arguments
		item := responsesItem{Type: "function_call", ID: s.meta.itemID("fc", n), Status: "in_progress", CallID: c.ID, Name: c.Name, Arguments: &empty}
		s.items = append(s.items, item)
		out = append(out, s.event("response.output_item.added", map[string]any{"output_index": n, "item": item})...)
		out = append(out, s.event("response.function_call_arguments.delta", map[string]any{"item_id": item.ID, "output_index": n, "delta": args})...)
		out = append(out, s.event("response.function_call_arguments.done", map[string]any{"item_id": item.ID, "output_index": n, "arguments": args})...)
		item.Status, item.Arguments = "completed", &args
		s.items[n] = item
		out = append(out, s.event("response.output_item.done", map[string]any{"output_index": n, "item": item})...)
	}
	return out
}

// Finish closes the open item and returns response.completed (response.incomplete after a
// length finish) with the whole response and usage.
func (s *ResponseStream) Finish(f Finish, u Usage) []byte {
	out := s.closeItem()
	status, incomplete := responsesStatus(f)
	typ := "response.completed"
	if status == "incomplete" {
		typ = "response.incomplete"
	}
	return append(out, s.event(typ, map[string]any{"response": s.body(status, responsesUsageOf(u), incomplete)})...)
}

// Error returns the events that end a Responses stream which failed after it started: an
// `error` event {"type":"error","code":code,"message":message,"param":null} and then
// response.failed whose response has status "failed" and error {code, message} (OpenAI
// Responses streaming events), each with its sequence_number.
func (s *ResponseStream) Error(code, message string) []byte {
	out := s.event("error", map[string]any{"code": code, "message": message, "param": nil})
	body := s.body("failed", nil, nil)
	return append(out, s.event("response.failed", map[string]any{"response": responsesFailed{responsesBody: body,
		Error: map[string]string{"code": code, "message": message}}})...)
}

// responsesFailed is a response body with its error object.
type responsesFailed struct {
	responsesBody
	Error map[string]string `json:"error"`
}
