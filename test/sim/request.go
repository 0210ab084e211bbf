package sim

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/smg-go/smg/test/sim/kvcache"
)

// route identifies an inference surface.
type route int

const (
	routeChat route = iota
	routeCompletions
	routeGenerate
	routeMessages
	routeResponses
)

// rawReq is the union of the request fields the simulator reads; unknown fields are ignored.
type rawReq struct {
	Model          string          `json:"model"`
	Messages       json.RawMessage `json:"messages"`
	Prompt         json.RawMessage `json:"prompt"`
	Text           json.RawMessage `json:"text"`
	InputIDs       json.RawMessage `json:"input_ids"`
	Input          json.RawMessage `json:"input"`
	Instructions   json.RawMessage `json:"instructions"`
	System         json.RawMessage `json:"system"`
	SamplingParams *struct {
		MaxNewTokens *int `json:"max_new_tokens"`
		N            *int `json:"n"`
	} `json:"sampling_params"`
	MaxTokens           *int `json:"max_tokens"`
	MaxCompletionTokens *int `json:"max_completion_tokens"`
	MaxOutputTokens     *int `json:"max_output_tokens"`
	N                   *int `json:"n"`
	Stream              bool `json:"stream"`
	StreamOptions       *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	Logprobs         json.RawMessage `json:"logprobs"`
	TopLogprobs      int             `json:"top_logprobs"`
	ReturnLogprob    bool            `json:"return_logprob"`
	BootstrapHost    json.RawMessage `json:"bootstrap_host"`
	BootstrapPort    json.RawMessage `json:"bootstrap_port"`
	BootstrapRoom    json.RawMessage `json:"bootstrap_room"`
	RoutedDPRank     json.RawMessage `json:"routed_dp_rank"`
	PrefillDPRank    json.RawMessage `json:"disagg_prefill_dp_rank"`
	KVTransferParams json.RawMessage `json:"kv_transfer_params"`
	SimFault         json.RawMessage `json:"sim_fault"`
	IgnoreEOS        bool            `json:"ignore_eos"`
	Stop             json.RawMessage `json:"stop"`
	StopTokenIDs     json.RawMessage `json:"stop_token_ids"`
	Rid              json.RawMessage `json:"rid"`
}

// item is one sequence to generate: a batch entry or one of n samples.
type item struct {
	ids    []int32
	digest uint64
	// seed drives the generator; set by the handoff (handoffSeed) or locally (localSeed).
	seed uint64
	// cached is usage cached_tokens: the prefix-cache hit of an instance that computed the
	// prompt, or every prompt token when the KV arrived through a handoff (kvIn).
	cached int
	kvIn   bool
	// lease holds the prompt's KV blocks from admission to the end of the request (set on
	// the first of the n samples of each prompt).
	lease *kvcache.Lease
}

// job is a normalized inference request.
type job struct {
	route     route
	canary    bool // a gateway canary (isCanary)
	items     []item
	batch     bool // /generate answers with a JSON array
	maxTokens int
	stream    bool
	usageInSt bool // stream_options.include_usage
	logprobs  bool
	topLP     int
	rid       string
	n         int // samples per prompt
	// routedRank and prefillRank are a --dp-aware leg's routed_dp_rank and (decode)
	// disagg_prefill_dp_rank, with Config.DPSize > 1; nil otherwise.
	routedRank, prefillRank *int
}

// reqError is a client or engine error with the HTTP status it maps to; rendered in the
// engine's own shape by writeError.
type reqError struct {
	status int
	msg    string
	param  string
	// generation marks a failure vLLM finds while generating (a KV load that failed under
	// kv_load_failure_policy=fail): a streaming request has its 200 head and, on chat, its
	// role-only chunk by then, so the error comes as an event (out.failGenerating).
	generation bool
}

func (e *reqError) Error() string { return e.msg }

func badRequest(format string, a ...any) *reqError {
	return &reqError{status: http.StatusBadRequest, msg: fmt.Sprintf(format, a...)}
}

// contentText extracts text from a chat content value: a string, or a list of parts whose
// "text" fields are concatenated.
func contentText(raw json.RawMessage) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	if raw[0] == '"' {
		var s string
		err := json.Unmarshal(raw, &s)
		return s, err
	}
	var parts []struct {
		Text string `json:"text"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", err
	}
	var b strings.Builder
	for _, p := range parts {
		b.WriteString(p.Text)
	}
	return b.String(), nil
}

type rawMsg struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

func renderMessages(raw json.RawMessage, first []Message) (string, error) {
	var msgs []rawMsg
	if err := json.Unmarshal(raw, &msgs); err != nil {
		return "", fmt.Errorf("messages must be a list of {role, content}: %v", err)
	}
	out := first
	for _, m := range msgs {
		t, err := contentText(m.Content)
		if err != nil {
			return "", fmt.Errorf("message content must be a string or a list of parts: %v", err)
		}
		out = append(out, Message{Role: m.Role, Content: t})
	}
	return ChatPrompt(out...), nil
}

// promptList decodes a prompt that is a string, a list of strings, a list of token ids or a
// list of lists of token ids. list reports whether the value was a batch.
func promptList(tok tokenizer, raw json.RawMessage, field string) (prompts [][]int32, list bool, e *reqError) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, false, nil
	}
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, false, badRequest("%s: %v", field, err)
		}
		return [][]int32{tok(s)}, false, nil
	}
	var elems []json.RawMessage
	if err := json.Unmarshal(raw, &elems); err != nil || len(elems) == 0 {
		return nil, false, badRequest("%s must be a string, a list of strings or a list of token ids", field)
	}
	switch elems[0][0] {
	case '"':
		var ss []string
		if err := json.Unmarshal(raw, &ss); err != nil {
			return nil, false, badRequest("%s: %v", field, err)
		}
		for _, s := range ss {
			prompts = append(prompts, tok(s))
		}
		return prompts, true, nil
	case '[':
		var ll [][]int32
		if err := json.Unmarshal(raw, &ll); err != nil {
			return nil, false, badRequest("%s: %v", field, err)
		}
		return ll, true, nil
	default:
		var l []int32
		if err := json.Unmarshal(raw, &l); err != nil {
			return nil, false, badRequest("%s: %v", field, err)
		}
		return [][]int32{l}, false, nil
	}
}

func firstPos(def int, ps ...*int) (int, error) {
	for _, p := range ps {
		if p != nil {
			if *p < 0 {
				return 0, fmt.Errorf("max tokens must be non-negative, got %d", *p)
			}
			return *p, nil
		}
	}
	return def, nil
}

// normalize turns a decoded body into a job. Errors are 400s.
func normalize(tok tokenizer, rt route, r *rawReq) (*job, *reqError) {
	j := &job{route: rt, stream: r.Stream}
	var prompts [][]int32
	n := 1
	if r.N != nil {
		n = *r.N
	}
	var err error
	switch rt {
	case routeChat, routeMessages:
		if len(r.Messages) == 0 {
			return nil, badRequest("messages is required")
		}
		var first []Message
		if rt == routeMessages && len(r.System) > 0 {
			s, e := contentText(r.System)
			if e != nil {
				return nil, badRequest("system must be a string or a list of blocks")
			}
			first = []Message{{Role: "system", Content: s}}
		}
		p, e := renderMessages(r.Messages, first)
		if e != nil {
			return nil, badRequest("%v", e)
		}
		prompts = [][]int32{tok(p)}
		j.maxTokens, err = firstPos(16, r.MaxCompletionTokens, r.MaxTokens)
		if rt == routeChat && len(r.Logprobs) > 0 && string(r.Logprobs) == "true" {
			j.logprobs, j.topLP = true, r.TopLogprobs
		}
	case routeCompletions:
		var e *reqError
		if prompts, _, e = promptList(tok, r.Prompt, "prompt"); e != nil {
			return nil, e
		}
		if prompts == nil {
			return nil, badRequest("prompt is required")
		}
		j.maxTokens, err = firstPos(16, r.MaxTokens)
		if len(r.Logprobs) > 0 && string(r.Logprobs) != "null" && string(r.Logprobs) != "false" {
			j.logprobs = true
			_ = json.Unmarshal(r.Logprobs, &j.topLP)
		}
	case routeGenerate:
		var e *reqError
		raw, field := r.Text, "text"
		if len(r.InputIDs) > 0 && string(r.InputIDs) != "null" {
			raw, field = r.InputIDs, "input_ids"
		}
		if prompts, j.batch, e = promptList(tok, raw, field); e != nil {
			return nil, e
		}
		if prompts == nil {
			return nil, badRequest("Either text or input_ids should be provided.")
		}
		var mnt *int
		n = 1
		if r.SamplingParams != nil {
			mnt = r.SamplingParams.MaxNewTokens
			if r.SamplingParams.N != nil {
				n = *r.SamplingParams.N
			}
		}
		if n > 1 {
			j.batch = true
		}
		j.maxTokens, err = firstPos(128, mnt)
		j.logprobs = r.ReturnLogprob
	case routeResponses:
		var first []Message
		if len(r.Instructions) > 0 && string(r.Instructions) != "null" {
			s, e := contentText(r.Instructions)
			if e != nil {
				return nil, badRequest("instructions must be a string")
			}
			first = []Message{{Role: "system", Content: s}}
		}
		var p string
		switch {
		case len(r.Input) == 0 || string(r.Input) == "null":
			return nil, badRequest("input is required")
		case r.Input[0] == '"':
			s, _ := contentText(r.Input)
			p = ChatPrompt(append(first, Message{Role: "user", Content: s})...)
		default:
			var e error
			if p, e = renderMessages(r.Input, first); e != nil {
				return nil, badRequest("%v", e)
			}
		}
		prompts = [][]int32{tok(p)}
		j.maxTokens, err = firstPos(16, r.MaxOutputTokens, r.MaxTokens)
		n = 1
	}
	if err != nil {
		return nil, badRequest("%v", err)
	}
	if n < 1 {
		return nil, badRequest("n must be at least 1, got %d", n)
	}
	if r.StreamOptions != nil {
		j.usageInSt = r.StreamOptions.IncludeUsage
	}
	j.n = n
	j.items = make([]item, 0, len(prompts)*n)
	for _, p := range prompts {
		if len(p) == 0 {
			return nil, badRequest("The prompt is empty; it must contain at least one token.")
		}
		d := digestIDs(p)
		for k := 0; k < n; k++ {
			j.items = append(j.items, item{ids: p, digest: d})
		}
	}
	if len(r.Rid) > 0 && r.Rid[0] == '"' {
		_ = json.Unmarshal(r.Rid, &j.rid)
	}
	return j, nil
}

// maxPromptLen is the longest prompt of the job.
func (j *job) maxPromptLen() int {
	m := 0
	for i := range j.items {
		m = max(m, len(j.items[i].ids))
	}
	return m
}
