package pipeline

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"

	"github.com/smg-go/smg/domain/errs"
	"github.com/smg-go/smg/domain/handoff"
	"github.com/smg-go/smg/domain/text"
	"github.com/smg-go/smg/domain/wire"
	"github.com/smg-go/smg/domain/worker"
	"github.com/smg-go/smg/ports"
)

// clientBody is the part of a chat, completions or /generate body the gRPC pipeline reads
// (OpenAI and SGLang field names). /generate keeps its knobs in sampling_params.
type clientBody struct {
	Model               string          `json:"model"`
	Messages            json.RawMessage `json:"messages"`
	Tools               json.RawMessage `json:"tools"`
	ChatTemplateKwargs  json.RawMessage `json:"chat_template_kwargs"`
	Prompt              json.RawMessage `json:"prompt"`
	Text                json.RawMessage `json:"text"`
	InputIDs            []uint32        `json:"input_ids"`
	Rid                 string          `json:"rid"`
	Stream              bool            `json:"stream"`
	StreamOptions       *streamOptions  `json:"stream_options"`
	Echo                bool            `json:"echo"`
	SamplingParams      *knobs          `json:"sampling_params"`
	MaxCompletionTokens *uint32         `json:"max_completion_tokens"`
	MaxOutputTokens     *uint32         `json:"max_output_tokens"`
	StopSequences       []string        `json:"stop_sequences"`
	knobs
}

type streamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

// knobs are the sampling fields shared by the OpenAI bodies and /generate's
// sampling_params (which names the cap max_new_tokens).
type knobs struct {
	MaxTokens         *uint32         `json:"max_tokens"`
	MaxNewTokens      *uint32         `json:"max_new_tokens"`
	MinTokens         uint32          `json:"min_tokens"`
	MinNewTokens      uint32          `json:"min_new_tokens"`
	Temperature       *float32        `json:"temperature"`
	TopP              *float32        `json:"top_p"`
	TopK              *int32          `json:"top_k"`
	MinP              *float32        `json:"min_p"`
	FrequencyPenalty  *float32        `json:"frequency_penalty"`
	PresencePenalty   *float32        `json:"presence_penalty"`
	RepetitionPenalty *float32        `json:"repetition_penalty"`
	Stop              json.RawMessage `json:"stop"`
	StopTokenIDs      []uint32        `json:"stop_token_ids"`
	IgnoreEOS         bool            `json:"ignore_eos"`
	SkipSpecialTokens *bool           `json:"skip_special_tokens"`
	N                 *int            `json:"n"`
	Seed              *int64          `json:"seed"`
}

// prompt is one prompt of a request: its text (may be "" for /generate input_ids) and ids.
type prompt struct {
	text string
	ids  []uint32
}

// job is a prepared request: the model's text pipeline, the prompts, and the sampling the
// legs carry. It is rebuilt on every attempt (the tokenizer is cached by the registry).
type job struct {
	rq       *handoff.Request
	model    *text.Model
	name     string // the model name to echo
	prompts  []prompt
	batch    bool // completions/generate sent a list of prompts
	sampling ports.GRPCSampling
	// stops are the string stops the gateway trims (all of them on SGLang).
	stops        []string
	stopIDs      []uint32
	n            int
	stream       bool
	includeUsage bool
	echo         bool
	skipSpecial  bool
	rid          string
	tools        json.RawMessage
	lp           logprobAsk // output logprobs asked for
	// messages are the chat messages in OpenAI shape (chat, /v1/messages, /v1/responses);
	// mm is the request's media, nil for text only (media.go).
	messages json.RawMessage
	mm       *mmJob
}

// promptTokens is the tokens of every prompt of the job.
func (j *job) promptTokens() int {
	n := 0
	for _, p := range j.prompts {
		n += len(p.ids)
	}
	return n
}

// hasTools reports a non-empty tools list.
func hasTools(raw json.RawMessage) bool {
	t := string(bytes.TrimSpace(raw))
	return t != "" && t != "null" && t != "[]"
}

// prepare is the first stage: read the body, load the model's tokenizer (flags, the
// workers' labels, then their GetTokenizer bundles), render the chat template and tokenize
// (add_special_tokens=false, grpc.md §1.14).
func (pl *Pipeline) prepare(ctx context.Context, rq *handoff.Request, p, dc *worker.Live) (*job, error) {
	if err := checkSamples(rq.N); err != nil {
		return nil, err
	}
	lp, err := readLogprobs(rq)
	if err != nil {
		return nil, err
	}
	var b clientBody
	if err := json.Unmarshal(rq.Body.Bytes(), &b); err != nil {
		return nil, bodyError(err)
	}
	name := b.Model
	if name == "" && len(p.Models) > 0 {
		name = p.Models[0]
	}
	m, err := pl.tokenizer(ctx, name, p, dc)
	if err != nil {
		return nil, err
	}
	k := b.knobs
	if rq.Route == handoff.RouteGenerate && b.SamplingParams != nil {
		k = *b.SamplingParams
		if k.MaxTokens == nil {
			k.MaxTokens = k.MaxNewTokens
		}
		if k.MinTokens == 0 {
			k.MinTokens = k.MinNewTokens
		}
	}
	if rq.Route == handoff.RouteChat && b.MaxCompletionTokens != nil {
		k.MaxTokens = b.MaxCompletionTokens
	}
	if rq.Route == handoff.RouteResponses {
		k.MaxTokens = b.MaxOutputTokens
	}
	if rq.Route == handoff.RouteMessages && len(b.StopSequences) > 0 {
		k.Stop, _ = json.Marshal(b.StopSequences)
	}
	if err := checkKnobs(rq.Route, &b, &k); err != nil {
		return nil, err
	}
	j := &job{rq: rq, model: m, name: name, n: rq.N, stream: b.Stream, echo: b.Echo, rid: b.Rid, tools: b.Tools,
		includeUsage: b.StreamOptions != nil && b.StreamOptions.IncludeUsage, skipSpecial: true, lp: lp}
	if k.SkipSpecialTokens != nil {
		j.skipSpecial = *k.SkipSpecialTokens
	}
	stops, err := stopList(k.Stop)
	if err != nil {
		return nil, err
	}
	j.sampling = ports.GRPCSampling{Temperature: k.Temperature, TopP: k.TopP, TopK: k.TopK, MinP: k.MinP,
		FrequencyPenalty: k.FrequencyPenalty, PresencePenalty: k.PresencePenalty, RepetitionPenalty: k.RepetitionPenalty,
		MaxTokens: k.MaxTokens, MinTokens: k.MinTokens, IgnoreEOS: k.IgnoreEOS, SkipSpecialTokens: j.skipSpecial, Seed: k.Seed}
	if dc.Runtime == worker.RuntimeSGLang {
		// The gateway detokenizes: SGLang always gets skip_special_tokens (grpc.md §1.14);
		// the client's choice applies to the gateway's own decoder.
		j.sampling.SkipSpecialTokens = true
		// SGLang workers run without a tokenizer: one-token stops become ids, every string
		// stop is the gateway's to trim (helpers.rs resolve_string_stops).
		r := text.ResolveStringStops(m.Tokenizer, stops, k.StopTokenIDs)
		j.sampling.StopTokenIDs, j.stops = r.StopTokenIDs, r.GatewayStops
	} else {
		j.sampling.Stop, j.sampling.StopTokenIDs, j.stops = stops, k.StopTokenIDs, stops
	}
	j.stopIDs = j.sampling.StopTokenIDs
	switch rq.Route {
	case handoff.RouteChat:
		if err := checkMessages(b.Messages); err != nil {
			return nil, err
		}
		in := text.ChatInput{Messages: b.Messages, Tools: b.Tools, AddGenerationPrompt: true, TemplateKwargs: b.ChatTemplateKwargs}
		txt, ids, err := m.ChatPrompt(in)
		if err != nil {
			if errors.Is(err, text.ErrNoChatTemplate) {
				return nil, errs.BadRequest("model '%s': %v", name, err)
			}
			return nil, templateError(err)
		}
		j.prompts = []prompt{{text: txt, ids: ids}}
		j.messages = b.Messages
	case handoff.RouteMessages, handoff.RouteResponses:
		conv := text.FromAnthropic
		if rq.Route == handoff.RouteResponses {
			conv = text.FromResponses
		}
		in, err := conv(rq.Body.Bytes())
		if err != nil {
			var te *json.UnmarshalTypeError
			if errors.As(err, &te) {
				return nil, bodyError(err)
			}
			return nil, errs.BadRequest("%v", err)
		}
		j.tools = in.Tools
		txt, ids, err := m.ChatPrompt(in)
		if err != nil {
			return nil, templateError(err)
		}
		j.prompts = []prompt{{text: txt, ids: ids}}
		j.messages = in.Messages
	case handoff.RouteCompletions:
		if ids, batch, ok := idList(b.Prompt); ok {
			j.prompts, j.batch = ids, batch
			break
		}
		ps, batch, err := textList(b.Prompt, "prompt")
		if err != nil {
			return nil, err
		}
		j.batch = batch
		for _, s := range ps {
			j.prompts = append(j.prompts, prompt{text: s, ids: m.Tokenizer.Encode(s, false)})
		}
	case handoff.RouteGenerate:
		if len(b.InputIDs) > 0 {
			j.prompts = []prompt{{ids: b.InputIDs}}
			break
		}
		ps, batch, err := textList(b.Text, "text")
		if err != nil {
			return nil, err
		}
		j.batch = batch
		for _, s := range ps {
			j.prompts = append(j.prompts, prompt{text: s, ids: m.Tokenizer.Encode(s, false)})
		}
	default:
		return nil, errs.New(http.StatusNotImplemented, wire.CodeNotSupported, "%s is not served over gRPC PD yet", rq.Route.String())
	}
	for _, pr := range j.prompts {
		if len(pr.ids) == 0 {
			return nil, errs.BadRequest("the prompt is empty")
		}
	}
	field := "prompt"
	if rq.Route == handoff.RouteGenerate {
		field = "input_ids"
	}
	if err := checkVocab(j.prompts, m.Tokenizer, field); err != nil {
		return nil, err
	}
	return j, nil
}

// tokenizer loads the model's text pipeline from the registry: the sources of
// text.WorkerSources (labels, --tokenizer-path, --model-path), then GetTokenizer on the
// pair's workers.
func (pl *Pipeline) tokenizer(ctx context.Context, name string, p, dc *worker.Live) (*text.Model, error) {
	src := text.WorkerSources(p.Labels, pl.cfg.TokenizerPath, pl.cfg.ModelPath)
	m, err := pl.text.Get(ctx, name, src, []string{p.URL, dc.URL})
	if err != nil {
		if _, ok := errs.As(err); ok {
			return nil, err
		}
		return nil, errs.New(http.StatusInternalServerError, wire.CodeTokenizerNotFound, "no tokenizer for model '%s': %v", name, err)
	}
	return m, nil
}

// stopList reads "stop": null, a string, or a list of strings.
func stopList(raw json.RawMessage) ([]string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var one string
	if json.Unmarshal(raw, &one) == nil {
		return []string{one}, nil
	}
	var many []string
	if err := json.Unmarshal(raw, &many); err != nil {
		return nil, errs.BadRequest("stop must be a string or a list of strings")
	}
	return many, nil
}

// idList reads a completions prompt given as token ids: a flat list (one prompt) or a list
// of lists (a batch); ok is false for any other shape.
func idList(raw json.RawMessage) ([]prompt, bool, bool) {
	raw = bytes.TrimSpace(raw)
	if !maybeIDs(raw) {
		return nil, false, false // a string or a list of strings: both decodes would fail
	}
	var one []uint32
	if len(raw) > 0 && json.Unmarshal(raw, &one) == nil && len(one) > 0 {
		return []prompt{{ids: one}}, false, true
	}
	var many [][]uint32
	if len(raw) > 0 && json.Unmarshal(raw, &many) == nil && len(many) > 0 {
		out := make([]prompt, len(many))
		for i, ids := range many {
			out[i] = prompt{ids: ids}
		}
		return out, true, true
	}
	return nil, false, false
}

// maybeIDs reports whether raw may decode as a list of ids or of id lists: it is an array
// whose first element is not a string. It spares the common text prompt two decodes that
// fail (and allocate their errors).
func maybeIDs(raw []byte) bool {
	if len(raw) == 0 || raw[0] != '[' {
		return false
	}
	rest := bytes.TrimLeft(raw[1:], " \t\r\n")
	return len(rest) == 0 || rest[0] != '"'
}

// textList reads a prompt field: a string, or a non-empty list of strings (batch true).
func textList(raw json.RawMessage, field string) ([]string, bool, error) {
	raw = bytes.TrimSpace(raw)
	var one string
	if len(raw) > 0 && json.Unmarshal(raw, &one) == nil {
		return []string{one}, false, nil
	}
	var many []string
	if len(raw) > 0 && json.Unmarshal(raw, &many) == nil && len(many) > 0 {
		return many, true, nil
	}
	return nil, false, errs.BadRequest("%s must be a string or a non-empty list of strings", field)
}
