package fleetbench

import (
	"fmt"
	"slices"
	"strings"
)

// Message is one chat message of a request ({"role","content"}, OpenAI chat completions).
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// Request is one pre-generated request of a workload.
type Request struct {
	// Messages is the chat history sent; the simulators render it as "role: content\n" per
	// message (sim.ChatPrompt), so a history that extends another extends its prompt.
	Messages []Message
	// MaxTokens is the output length asked for (max_tokens).
	MaxTokens int
	// Key is the routing key (user, session or agent id), sent as X-Smg-Routing-Key as a
	// load balancer with sticky sessions would; consistent_hashing and manual route on it.
	Key string
	// Group names what the request shares with others ("prefix-3", "session-12",
	// "agent-1", "doc-2"), "" for nothing.
	Group string
	// After is the index of the request this one follows (the previous turn of its session
	// or step of its agent, whose answer a user or agent waits for), -1 for none. The
	// driver sends it at its arrival time or when After ended, whichever is later.
	After int
}

// Words is the request's prompt length in stand-in tokens (whitespace-separated words of
// the rendered chat prompt).
func (r Request) Words() int {
	n := 0
	for _, m := range r.Messages {
		n += 1 + len(strings.Fields(m.Content))
	}
	return n
}

// Workload names (the --workload values).
const (
	SharedPrefix = "shared-prefix"
	MultiTurn    = "multi-turn"
	Agentic      = "agentic"
	Unique       = "unique"
	Mixed        = "mixed"
)

// WorkloadNames lists every workload in report order.
func WorkloadNames() []string { return []string{SharedPrefix, MultiTurn, Agentic, Unique, Mixed} }

// ParseWorkloads splits a comma list of workload names ("all" for every one), keeping the
// given order and dropping repeats. Errors name an unknown workload and list the valid ones.
func ParseWorkloads(list string) ([]string, error) {
	var out []string
	for _, w := range strings.Split(list, ",") {
		w = strings.TrimSpace(w)
		switch {
		case w == "":
			continue
		case w == "all":
			for _, n := range WorkloadNames() {
				if !slices.Contains(out, n) {
					out = append(out, n)
				}
			}
		case slices.Contains(WorkloadNames(), w):
			if !slices.Contains(out, w) {
				out = append(out, w)
			}
		default:
			return nil, fmt.Errorf("fleetbench: unknown workload %q (valid: %s, all)", w, strings.Join(WorkloadNames(), ", "))
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("fleetbench: no workload given (valid: %s, all)", strings.Join(WorkloadNames(), ", "))
	}
	return out, nil
}

// Shape sizes the workloads. Lengths are in stand-in tokens (words). DefaultShape gives the
// documented defaults; Scale shrinks or grows every long text at once (tests use a tiny one).
type Shape struct {
	// MaxTokens is every request's output length.
	MaxTokens int
	// Scale multiplies the long lengths below (prefixes, contexts, documents); 1 = as given.
	Scale float64

	// Prefixes system prompts of PrefixWords each, Users users, suffixes of SuffixMin..SuffixMax.
	Prefixes, PrefixWords, Users, SuffixMin, SuffixMax int
	// Sessions concurrent chat sessions of up to Turns turns after a shared system prompt of
	// SystemWords; each user turn TurnMin..TurnMax words.
	Sessions, Turns, SystemWords, TurnMin, TurnMax int
	// Agents agents, each with a context of ContextWords reused by every call, tasks of up
	// to Steps steps, each adding a tool result of ToolMin..ToolMax words.
	Agents, ContextWords, Steps, ToolMin, ToolMax int
	// UniqueMin..UniqueMax words per unique prompt.
	UniqueMin, UniqueMax int
	// LongShare of the mixed requests ask about one of Docs documents of DocWords; the rest
	// are unique short prompts of ShortMin..ShortMax words.
	LongShare                  float64
	Docs, DocWords             int
	ShortMin, ShortMax, AskMax int
}

// DefaultShape is the documented default (docs/fleet-bench.md): 16 prefixes × 3000 tokens for
// 256 users; 32 sessions of up to 8 turns after a 300-token system prompt; 4 agents over
// 16,000-token contexts, tasks of up to 10 steps with 300–800-token tool results; unique
// prompts of 500–1500 tokens; a mix of 75 % short (50–200) and 25 % questions over 6
// documents of 6000 tokens. Outputs are 32 tokens.
func DefaultShape() Shape {
	return Shape{MaxTokens: 32, Scale: 1,
		Prefixes: 16, PrefixWords: 3000, Users: 256, SuffixMin: 20, SuffixMax: 80,
		Sessions: 32, Turns: 8, SystemWords: 300, TurnMin: 40, TurnMax: 160,
		Agents: 4, ContextWords: 16000, Steps: 10, ToolMin: 300, ToolMax: 800,
		UniqueMin: 500, UniqueMax: 1500,
		LongShare: 0.25, Docs: 6, DocWords: 6000, ShortMin: 50, ShortMax: 200, AskMax: 40}
}

// scaled applies Scale to a long length (at least 1).
func (s Shape) scaled(n int) int {
	if s.Scale <= 0 {
		return n
	}
	return max(int(float64(n)*s.Scale), 1)
}

// validate rejects shapes that cannot generate requests.
func (s Shape) validate() error {
	if s.MaxTokens < 1 || s.Prefixes < 1 || s.Users < 1 || s.Sessions < 1 || s.Turns < 1 ||
		s.Agents < 1 || s.Steps < 1 || s.Docs < 1 || s.LongShare < 0 || s.LongShare > 1 {
		return fmt.Errorf("fleetbench: workload shape needs max tokens, prefixes, users, sessions, turns, agents, steps and docs >= 1 and a long share in [0, 1]: %+v", s)
	}
	return nil
}

// Generate returns n requests of workload name, deterministic in (seed, shape). Errors: an
// unknown workload, n < 1, an invalid shape.
func Generate(name string, seed uint64, n int, s Shape) ([]Request, error) {
	if n < 1 {
		return nil, fmt.Errorf("fleetbench: need at least one request, got %d", n)
	}
	if err := s.validate(); err != nil {
		return nil, err
	}
	switch name {
	case SharedPrefix:
		return genSharedPrefix(seed, n, s), nil
	case MultiTurn:
		return genMultiTurn(seed, n, s), nil
	case Agentic:
		return genAgentic(seed, n, s), nil
	case Unique:
		return genUnique(seed, n, s), nil
	case Mixed:
		return genMixed(seed, n, s), nil
	}
	return nil, fmt.Errorf("fleetbench: unknown workload %q (valid: %s)", name, strings.Join(WorkloadNames(), ", "))
}
