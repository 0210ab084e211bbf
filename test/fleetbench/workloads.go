package fleetbench

import (
	"math/rand/v2"
	"slices"
)

// Stream numbers of newRand, one per workload part, so e.g. the prefixes do not change when
// the user draw does.
const (
	streamPrefix uint64 = iota + 1
	streamDraw
	streamContext
	streamDocs
)

// genSharedPrefix: Prefixes long system prompts, each request one of them (uniform) for one
// of Users users, with a short unique suffix. Key: the user.
func genSharedPrefix(seed uint64, n int, s Shape) []Request {
	pr := newRand(seed, streamPrefix)
	prefixes := make([]string, s.Prefixes)
	for i := range prefixes {
		prefixes[i] = text(pr, "prefix-"+itoa(i), s.scaled(s.PrefixWords))
	}
	r := newRand(seed, streamDraw)
	out := make([]Request, n)
	for i := range out {
		p, u := r.IntN(s.Prefixes), r.IntN(s.Users)
		out[i] = Request{
			Messages: []Message{
				{Role: "system", Content: prefixes[p]},
				{Role: "user", Content: text(r, "user-"+itoa(u)+"-q"+itoa(i), span(r, s.SuffixMin, s.SuffixMax))},
			},
			MaxTokens: s.MaxTokens, Key: "user-" + itoa(u), Group: "prefix-" + itoa(p), After: -1,
		}
	}
	return out
}

// answer is the stand-in for a previous answer re-sent in a history: MaxTokens words, fixed
// by the generator so the workload does not depend on timing (the simulators' own answers
// are as novel to a prefill's cache as these).
func answer(s Shape, r *rand.Rand, tag string) string { return text(r, tag, s.MaxTokens) }

// genMultiTurn: Sessions sessions run at once; each request is the next turn of a session
// drawn at random: a shared system prompt, the session's history (user turn, answer, …)
// and a new user turn. A session that reached Turns turns is replaced by a new one. After
// is the session's previous turn. Key: the session.
func genMultiTurn(seed uint64, n int, s Shape) []Request {
	sys := text(newRand(seed, streamPrefix), "system", s.scaled(s.SystemWords))
	r := newRand(seed, streamDraw)
	type session struct {
		id, turns, last int
		hist            []Message
	}
	next := 0
	fresh := func() *session {
		next++
		return &session{id: next - 1, last: -1, hist: []Message{{Role: "system", Content: sys}}}
	}
	live := make([]*session, s.Sessions)
	for i := range live {
		live[i] = fresh()
	}
	out := make([]Request, n)
	for i := range out {
		k := r.IntN(len(live))
		ss := live[k]
		name := "session-" + itoa(ss.id)
		if ss.turns > 0 {
			ss.hist = append(ss.hist, Message{Role: "assistant", Content: answer(s, r, name+"-a"+itoa(ss.turns))})
		}
		ss.hist = append(ss.hist, Message{Role: "user", Content: text(r, name+"-u"+itoa(ss.turns), span(r, s.TurnMin, s.TurnMax))})
		out[i] = Request{Messages: slices.Clone(ss.hist), MaxTokens: s.MaxTokens, Key: name, Group: name, After: ss.last}
		ss.turns++
		ss.last = i
		if ss.turns >= s.Turns {
			live[k] = fresh()
		}
	}
	return out
}

// genAgentic: Agents agents each own a long context (a repository: ContextWords), reused by
// every call. A call is the context, the task and its steps so far (an assistant tool call,
// a ToolMin..ToolMax tool result each); a task of Steps steps is followed by a new task on
// the same context. Each request is the next call of an agent drawn at random; After is
// that agent's previous call. Key: the agent.
func genAgentic(seed uint64, n int, s Shape) []Request {
	cr := newRand(seed, streamContext)
	type agent struct {
		context    string
		task, step int
		last       int
		hist       []Message
	}
	agents := make([]*agent, s.Agents)
	for i := range agents {
		agents[i] = &agent{context: text(cr, "repo-"+itoa(i), s.scaled(s.ContextWords)), last: -1}
	}
	r := newRand(seed, streamDraw)
	out := make([]Request, n)
	for i := range out {
		k := r.IntN(len(agents))
		a := agents[k]
		name := "agent-" + itoa(k)
		if a.step == 0 {
			a.hist = []Message{{Role: "system", Content: a.context},
				{Role: "user", Content: text(r, name+"-task"+itoa(a.task), span(r, s.TurnMin, s.TurnMax))}}
		} else {
			tag := name + "-t" + itoa(a.task) + "-s" + itoa(a.step)
			a.hist = append(a.hist, Message{Role: "assistant", Content: answer(s, r, tag+"-call")},
				Message{Role: "user", Content: text(r, tag+"-tool", s.scaled(span(r, s.ToolMin, s.ToolMax)))})
		}
		out[i] = Request{Messages: slices.Clone(a.hist), MaxTokens: s.MaxTokens, Key: name, Group: name, After: a.last}
		a.last = i
		a.step++
		if a.step >= s.Steps {
			a.step = 0
			a.task++
		}
	}
	return out
}

// genUnique: no reuse at all (the control): every prompt is distinct from its first token.
// Key: the request.
func genUnique(seed uint64, n int, s Shape) []Request {
	r := newRand(seed, streamDraw)
	out := make([]Request, n)
	for i := range out {
		out[i] = Request{
			Messages:  []Message{{Role: "user", Content: text(r, "unique-"+itoa(i), s.scaled(span(r, s.UniqueMin, s.UniqueMax)))}},
			MaxTokens: s.MaxTokens, Key: "req-" + itoa(i), After: -1,
		}
	}
	return out
}

// genMixed: LongShare of the requests are a question about one of Docs long documents (the
// document as the system message, a short question), the rest short unique prompts. Key:
// the request.
func genMixed(seed uint64, n int, s Shape) []Request {
	dr := newRand(seed, streamDocs)
	docs := make([]string, s.Docs)
	for i := range docs {
		docs[i] = text(dr, "doc-"+itoa(i), s.scaled(s.DocWords))
	}
	r := newRand(seed, streamDraw)
	out := make([]Request, n)
	for i := range out {
		key := "req-" + itoa(i)
		if r.Float64() < s.LongShare {
			d := r.IntN(s.Docs)
			out[i] = Request{Messages: []Message{{Role: "system", Content: docs[d]},
				{Role: "user", Content: text(r, "ask-"+itoa(i), span(r, 5, max(s.AskMax, 5)))}},
				MaxTokens: s.MaxTokens, Key: key, Group: "doc-" + itoa(d), After: -1}
			continue
		}
		out[i] = Request{Messages: []Message{{Role: "user", Content: text(r, "short-"+itoa(i), span(r, s.ShortMin, s.ShortMax))}},
			MaxTokens: s.MaxTokens, Key: key, After: -1}
	}
	return out
}
