package respond

import (
	"strings"

	"github.com/smg-go/smg/domain/text"
)

// SampleState follows one sample from the engine's token ids to what the response shows: the
// gateway's detokenizer (stop strings, stop token ids, skip_special_tokens), then the
// reasoning and tool parsers. One per sample; not safe for concurrent use.
type SampleState struct {
	index   int
	dec     *text.Decoder
	parser  *OutputParser
	text    strings.Builder
	ids     []uint32
	lps     []Logprob
	content strings.Builder
	reason  strings.Builder
	calls   []ToolCall
	stopped bool
}

// NewSampleState starts sample index. parser may be nil (no tool or reasoning parsing).
func NewSampleState(index int, dec *text.Decoder, parser *OutputParser) *SampleState {
	if parser == nil {
		parser = NewOutputParser(nil, nil)
	}
	return &SampleState{index: index, dec: dec, parser: parser}
}

// Index is the sample's choice index.
func (s *SampleState) Index() int { return s.index }

// Tokens is how many generated ids Step has consumed so far (ids after a stop are not).
func (s *SampleState) Tokens() int { return len(s.ids) }

// Step consumes a chunk of generated ids (and their logprobs, if any, one per id) and returns
// what to stream: the parsed delta (chat, messages, responses), the raw text delta
// (completions, /generate), and whether a gateway-side stop ended the sample. Ids after a stop
// are ignored.
func (s *SampleState) Step(ids []uint32, lps []Logprob) (d Delta, raw string, stopped bool) {
	var b strings.Builder
	for i, id := range ids {
		if s.stopped {
			break
		}
		out, st := s.dec.Step(id)
		b.WriteString(out)
		s.ids = append(s.ids, id)
		if i < len(lps) {
			s.lps = append(s.lps, lps[i])
		}
		s.stopped = st
	}
	raw = b.String()
	s.text.WriteString(raw)
	d = s.parser.Push(raw)
	s.record(d)
	return d, raw, s.stopped
}

func (s *SampleState) record(d Delta) {
	s.content.WriteString(d.Content)
	s.reason.WriteString(d.Reasoning)
	s.calls = append(s.calls, d.ToolCalls...)
}

// Finish ends the sample with the engine's finish (GenerateComplete) and returns the last
// delta to stream, the last raw text, and the whole Sample. A stop the gateway matched wins
// over the engine's reason.
func (s *SampleState) Finish(engine Finish) (Delta, string, Sample) {
	raw := s.dec.Flush()
	s.text.WriteString(raw)
	d := s.parser.Push(raw)
	tail := s.parser.Flush()
	d.Reasoning += tail.Reasoning
	d.Content += tail.Content
	d.ToolCalls = append(d.ToolCalls, tail.ToolCalls...)
	s.record(d)
	f := engine
	if stop, id, isID, ok := s.dec.Matched(); ok {
		f = Finish{Reason: "stop"}
		if isID {
			f.MatchedTokenID = &id
		} else {
			f.MatchedStop = &stop
		}
	}
	return d, raw, Sample{Index: s.index, Text: s.text.String(), Content: s.content.String(), Reasoning: s.reason.String(),
		ToolCalls: s.calls, Finish: f, Logprobs: s.lps, OutputIDs: s.ids, CompletionTokens: len(s.ids)}
}
