package sim

import (
	"encoding/json"
	"time"
)

// Non-streaming response bodies, one per surface. Shapes follow engines.md §2.2 (SGLang
// /generate meta_info), the OpenAI chat/completions objects both engines serve (vLLM adds a
// top-level kv_transfer_params, null when none), the Anthropic Messages object and a minimal
// Responses object.

// output is what generation produced for a job.
type output struct {
	n         int             // output tokens per item
	finishLen int             // SGLang finish_reason.length (0 on a prefill)
	kv        json.RawMessage // vLLM kv_transfer_params ("null" when none); nil for SGLang
	nixlID    string          // NIXL blocks kept for this answer (dropped if the client leaves)
	moriID    string          // MoRI-IO READ blocks kept for this answer (likewise)
	id        string
	created   int64
	model     string
	start     time.Time
}

func outIDs(it *item, n int) []int32 {
	ids := make([]int32, n)
	for k := range ids {
		ids[k] = tokenAt(it.seed, k)
	}
	return ids
}

func textOf(ids []int32) string {
	b := make([]byte, 0, 5*len(ids))
	for _, id := range ids {
		b = appendWord(b, id)
	}
	return string(b)
}

type promptDetails struct {
	CachedTokens int `json:"cached_tokens"`
}

type usage struct {
	PromptTokens        int           `json:"prompt_tokens"`
	CompletionTokens    int           `json:"completion_tokens"`
	TotalTokens         int           `json:"total_tokens"`
	PromptTokensDetails promptDetails `json:"prompt_tokens_details"`
}

// usageOf counts each distinct prompt once (n samples share it) and every output token.
func usageOf(j *job, o *output) usage {
	var u usage
	for i := range j.items {
		if i%j.n == 0 {
			u.PromptTokens += len(j.items[i].ids)
			u.PromptTokensDetails.CachedTokens += j.items[i].cached
		}
	}
	u.CompletionTokens = o.n * len(j.items)
	u.TotalTokens = u.PromptTokens + u.CompletionTokens
	return u
}

type topLP struct {
	Token   string   `json:"token"`
	Logprob float64  `json:"logprob"`
	Bytes   []byte   `json:"bytes"`
	Top     *[]topLP `json:"top_logprobs,omitempty"`
}

type chatLogprobs struct {
	Content []topLP `json:"content"`
}

func chatLP(ids []int32, top int) *chatLogprobs {
	lp := &chatLogprobs{Content: make([]topLP, len(ids))}
	for k, id := range ids {
		alts := make([]topLP, top)
		for a := range alts {
			alt := id + int32(a)
			alts[a] = topLP{Token: wordOf(alt), Logprob: logprobOf(alt) - float64(a)}
		}
		lp.Content[k] = topLP{Token: wordOf(id), Logprob: logprobOf(id), Top: &alts}
	}
	return lp
}

type complLogprobs struct {
	Tokens        []string             `json:"tokens"`
	TokenLogprobs []float64            `json:"token_logprobs"`
	TopLogprobs   []map[string]float64 `json:"top_logprobs"`
	TextOffset    []int                `json:"text_offset"`
}

func complLP(ids []int32, top int) *complLogprobs {
	lp := &complLogprobs{}
	off := 0
	for _, id := range ids {
		w := wordOf(id)
		lp.Tokens = append(lp.Tokens, w)
		lp.TokenLogprobs = append(lp.TokenLogprobs, logprobOf(id))
		m := map[string]float64{}
		for a := 0; a < max(top, 1); a++ {
			m[wordOf(id+int32(a))] = logprobOf(id+int32(a)) - float64(a)
		}
		lp.TopLogprobs = append(lp.TopLogprobs, m)
		lp.TextOffset = append(lp.TextOffset, off)
		off += len(w)
	}
	return lp
}

type chatMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

type chatChoice struct {
	Index        int           `json:"index"`
	Message      chatMessage   `json:"message"`
	Logprobs     *chatLogprobs `json:"logprobs"`
	FinishReason string        `json:"finish_reason"`
}

type complChoice struct {
	Index        int            `json:"index"`
	Text         string         `json:"text"`
	Logprobs     *complLogprobs `json:"logprobs"`
	FinishReason string         `json:"finish_reason"`
}

type openAIResp struct {
	ID      string          `json:"id"`
	Object  string          `json:"object"`
	Created int64           `json:"created"`
	Model   string          `json:"model"`
	Choices any             `json:"choices"`
	Usage   *usage          `json:"usage,omitempty"`
	KV      json.RawMessage `json:"kv_transfer_params,omitempty"`
}

// finishReason is SGLang's meta_info.finish_reason.
type finishReason struct {
	Type   string `json:"type"`
	Length int    `json:"length"`
}

type genMeta struct {
	ID                  string        `json:"id"`
	FinishReason        *finishReason `json:"finish_reason"`
	PromptTokens        int           `json:"prompt_tokens"`
	CompletionTokens    int           `json:"completion_tokens"`
	CachedTokens        int           `json:"cached_tokens"`
	WeightVersion       string        `json:"weight_version"`
	E2ELatency          float64       `json:"e2e_latency"`
	InputTokenLogprobs  [][3]any      `json:"input_token_logprobs,omitempty"`
	OutputTokenLogprobs [][3]any      `json:"output_token_logprobs,omitempty"`
}

type genResp struct {
	Text      string  `json:"text"`
	OutputIDs []int32 `json:"output_ids"`
	MetaInfo  genMeta `json:"meta_info"`
	Index     *int    `json:"index,omitempty"`
}

func inputLP(ids []int32) [][3]any {
	out := make([][3]any, len(ids))
	for k, id := range ids {
		var lp any
		if k > 0 {
			lp = logprobOf(id)
		}
		out[k] = [3]any{lp, id, nil}
	}
	return out
}

func outputLP(ids []int32) [][3]any {
	out := make([][3]any, len(ids))
	for k, id := range ids {
		out[k] = [3]any{logprobOf(id), id, nil}
	}
	return out
}

// genItem builds the /generate object of item i; ids are its output ids so far.
func genItem(j *job, o *output, i int, ids []int32, done bool, cumText string) genResp {
	it := &j.items[i]
	r := genResp{Text: cumText, OutputIDs: ids, MetaInfo: genMeta{ID: o.id, PromptTokens: len(it.ids),
		CompletionTokens: len(ids), CachedTokens: it.cached, WeightVersion: "default",
		E2ELatency: time.Since(o.start).Seconds()}}
	if j.batch {
		r.MetaInfo.ID = o.id + "-" + itoa(i)
		idx := i
		r.Index = &idx
	}
	if done {
		r.MetaInfo.FinishReason = &finishReason{Type: "length", Length: o.finishLen}
	}
	if j.logprobs {
		r.MetaInfo.InputTokenLogprobs = inputLP(it.ids)
		r.MetaInfo.OutputTokenLogprobs = outputLP(ids)
	}
	return r
}

type textBlock struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

type msgUsage struct {
	InputTokens  int `json:"input_tokens"`
	OutputTokens int `json:"output_tokens"`
}

type msgResp struct {
	ID           string          `json:"id"`
	Type         string          `json:"type"`
	Role         string          `json:"role"`
	Model        string          `json:"model"`
	Content      []textBlock     `json:"content"`
	StopReason   string          `json:"stop_reason"`
	StopSequence *string         `json:"stop_sequence"`
	Usage        msgUsage        `json:"usage"`
	KV           json.RawMessage `json:"kv_transfer_params,omitempty"`
}

type outText struct {
	Type        string `json:"type"`
	Text        string `json:"text"`
	Annotations []any  `json:"annotations"`
}

type respOutput struct {
	Type    string    `json:"type"`
	ID      string    `json:"id"`
	Status  string    `json:"status"`
	Role    string    `json:"role"`
	Content []outText `json:"content"`
}

type respUsage struct {
	InputTokens  int `json:"input_tokens"`
	OutputTokens int `json:"output_tokens"`
	TotalTokens  int `json:"total_tokens"`
}

type respResp struct {
	ID        string          `json:"id"`
	Object    string          `json:"object"`
	CreatedAt int64           `json:"created_at"`
	Model     string          `json:"model"`
	Status    string          `json:"status"`
	Output    []respOutput    `json:"output"`
	Usage     respUsage       `json:"usage"`
	KV        json.RawMessage `json:"kv_transfer_params,omitempty"`
}

func respObject(j *job, o *output, text, status string) respResp {
	u := usageOf(j, o)
	return respResp{ID: "resp_" + o.id, Object: "response", CreatedAt: o.created, Model: o.model, Status: status,
		Output: []respOutput{{Type: "message", ID: "msg_" + o.id, Status: status, Role: "assistant",
			Content: []outText{{Type: "output_text", Text: text, Annotations: []any{}}}}},
		Usage: respUsage{InputTokens: u.PromptTokens, OutputTokens: u.CompletionTokens, TotalTokens: u.TotalTokens}, KV: o.kv}
}

// renderBody builds the complete non-streaming body of j.
func renderBody(j *job, o *output) []byte {
	var v any
	switch j.route {
	case routeChat:
		cs := make([]chatChoice, len(j.items))
		for i := range j.items {
			ids := outIDs(&j.items[i], o.n)
			cs[i] = chatChoice{Index: i, Message: chatMessage{Role: "assistant", Content: textOf(ids)}, FinishReason: "length"}
			if j.logprobs {
				cs[i].Logprobs = chatLP(ids, j.topLP)
			}
		}
		u := usageOf(j, o)
		v = openAIResp{ID: "chatcmpl-" + o.id, Object: "chat.completion", Created: o.created, Model: o.model, Choices: cs, Usage: &u, KV: o.kv}
	case routeCompletions:
		cs := make([]complChoice, len(j.items))
		for i := range j.items {
			ids := outIDs(&j.items[i], o.n)
			cs[i] = complChoice{Index: i, Text: textOf(ids), FinishReason: "length"}
			if j.logprobs {
				cs[i].Logprobs = complLP(ids, j.topLP)
			}
		}
		u := usageOf(j, o)
		v = openAIResp{ID: "cmpl-" + o.id, Object: "text_completion", Created: o.created, Model: o.model, Choices: cs, Usage: &u, KV: o.kv}
	case routeGenerate:
		rs := make([]genResp, len(j.items))
		for i := range j.items {
			ids := outIDs(&j.items[i], o.n)
			rs[i] = genItem(j, o, i, ids, true, textOf(ids))
		}
		if j.batch {
			v = rs
		} else {
			v = rs[0]
		}
	case routeMessages:
		u := usageOf(j, o)
		v = msgResp{ID: "msg_" + o.id, Type: "message", Role: "assistant", Model: o.model,
			Content:    []textBlock{{Type: "text", Text: textOf(outIDs(&j.items[0], o.n))}},
			StopReason: "max_tokens", Usage: msgUsage{InputTokens: u.PromptTokens, OutputTokens: u.CompletionTokens}, KV: o.kv}
	case routeResponses:
		v = respObject(j, o, textOf(outIDs(&j.items[0], o.n)), "completed")
	}
	b, _ := json.Marshal(v)
	return b
}
