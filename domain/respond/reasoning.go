package respond

import (
	"fmt"
	"sort"
	"strings"
)

// ReasoningParser splits streamed model text into reasoning and answer text at think tags.
// One instance serves one sample; it is not safe for concurrent use.
type ReasoningParser struct {
	start, end  string
	inReasoning bool
	decided     bool // past the point where a start tag may open reasoning
	done        bool // the end tag was seen: everything else is answer text
	buf         string
}

// reasoningSpec is one --reasoning-parser: its tags and whether output starts inside
// reasoning (the template already opened <think> in the prompt).
type reasoningSpec struct {
	start, end         string
	initialInReasoning bool
}

// reasoningParsers are the --reasoning-parser names (SMG's spelling) supported here.
var reasoningParsers = map[string]reasoningSpec{
	// qwen3: Qwen3 hybrid models write <think>…</think> themselves.
	"qwen3": {"<think>", "</think>", false},
	// qwen3-thinking: Qwen3 thinking-only models (the template opens <think>).
	"qwen3-thinking": {"<think>", "</think>", true},
	// deepseek-r1: the template ends with <think>; output starts in reasoning.
	"deepseek-r1": {"<think>", "</think>", true},
}

// ReasoningParserNames lists the supported --reasoning-parser values, sorted.
func ReasoningParserNames() []string {
	names := make([]string, 0, len(reasoningParsers))
	for n := range reasoningParsers {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// NewReasoningParser returns the parser called name; unknown names are an error listing the
// supported ones (checked at start-up).
func NewReasoningParser(name string) (*ReasoningParser, error) {
	spec, ok := reasoningParsers[name]
	if !ok {
		return nil, fmt.Errorf("respond: unknown reasoning parser %q (supported: %s)", name, strings.Join(ReasoningParserNames(), ", "))
	}
	return &ReasoningParser{start: spec.start, end: spec.end, inReasoning: spec.initialInReasoning}, nil
}

// Push adds text and returns the reasoning and answer text that can be emitted now. A tag split
// across chunks is held until it is complete or has diverged. Text is not trimmed (as vLLM).
func (p *ReasoningParser) Push(text string) (reasoning, answer string) {
	if p.done {
		return "", text
	}
	p.buf += text
	if !p.inReasoning && !p.decided {
		trimmed := strings.TrimLeft(p.buf, " \t\r\n")
		switch {
		case strings.HasPrefix(trimmed, p.start):
			p.buf = trimmed[len(p.start):]
			p.inReasoning, p.decided = true, true
		case strings.HasPrefix(p.start, trimmed):
			return "", "" // maybe the start tag: wait
		default:
			p.decided, p.done = true, true
			out := p.buf
			p.buf = ""
			return "", out
		}
	}
	if p.inReasoning && !p.decided {
		// Output starting in reasoning may still repeat the start tag first.
		trimmed := strings.TrimLeft(p.buf, " \t\r\n")
		if strings.HasPrefix(p.start, trimmed) {
			return "", "" // whitespace or part of the start tag so far: wait
		}
		if strings.HasPrefix(trimmed, p.start) {
			p.buf = trimmed[len(p.start):]
		}
		p.decided = true
	}
	if i := strings.Index(p.buf, p.end); i >= 0 {
		reasoning, answer = p.buf[:i], p.buf[i+len(p.end):]
		p.buf, p.inReasoning, p.done = "", false, true
		return reasoning, answer
	}
	hold := partialSuffix(p.buf, p.end)
	reasoning = p.buf[:len(p.buf)-hold]
	p.buf = p.buf[len(p.buf)-hold:]
	return reasoning, ""
}

// Flush returns held text at the end of the output: reasoning when the end tag never came.
func (p *ReasoningParser) Flush() (reasoning, answer string) {
	out := p.buf
	p.buf = ""
	if p.inReasoning && !p.done {
		return out, ""
	}
	return "", out
}
