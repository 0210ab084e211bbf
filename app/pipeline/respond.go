package pipeline

import (
	"net/http"
	"sync"
	"time"

	"github.com/smg-go/smg/domain/handoff"
	"github.com/smg-go/smg/domain/respond"
	"github.com/smg-go/smg/domain/text"
	"github.com/smg-go/smg/domain/wire"
	"github.com/smg-go/smg/ports"
)

// responder is the respond stage: every decode event of every unit goes through it (under
// its lock), becomes the sample's text (detokenizer, gateway stops, parsers) and, when
// streaming, the route's SSE events; at the end it writes the non-streaming body or the
// stream's usage and [DONE]. committed is set once bytes reached the client.
type responder struct {
	mu        sync.Mutex
	j         *job
	w         http.ResponseWriter
	meta      respond.Meta
	states    []*respond.SampleState
	samples   []respond.Sample
	finished  []bool
	left      map[*unit]int // samples of a unit still running
	prompt    []ports.GRPCEvent
	gotPrompt []bool
	committed bool
	// dirty is set while stream bytes were written but not flushed (flushIdle).
	dirty bool
	// decodeID names the decode worker (X-Smg-Routed-Worker-Id); start anchors TTFT.
	decodeID string
	runtime  string
	start    time.Time
	metrics  ports.PDMetrics

	chat *respond.ChatStream
	cmpl *respond.CompletionStream
	gen  *respond.GenerateStream
	msg  *respond.MessageStream
	resp *respond.ResponseStream
	// started is set once a Messages/Responses stream sent its opening events.
	started bool

	// one backs the per-sample and per-prompt slices of the common request with one
	// prompt and one sample, which then need no allocation of their own.
	one struct {
		state    [1]*respond.SampleState
		sample   [1]respond.Sample
		finished [1]bool
		prompt   [1]ports.GRPCEvent
		got      [1]bool
	}
}

func (pl *Pipeline) newResponder(j *job, w http.ResponseWriter, clientID string, units []unit) *responder {
	total := len(j.prompts) * j.n
	r := &responder{j: j, w: w, meta: respond.Meta{ID: clientID, Model: j.name, Created: time.Now().Unix()},
		left: map[*unit]int{}, start: time.Now(), metrics: pl.metrics}
	if total == 1 {
		r.states, r.samples, r.finished = r.one.state[:], r.one.sample[:], r.one.finished[:]
	} else {
		r.states, r.samples, r.finished = make([]*respond.SampleState, total), make([]respond.Sample, total), make([]bool, total)
	}
	if len(j.prompts) == 1 {
		r.prompt, r.gotPrompt = r.one.prompt[:], r.one.got[:]
	} else {
		r.prompt, r.gotPrompt = make([]ports.GRPCEvent, len(j.prompts)), make([]bool, len(j.prompts))
	}
	if len(units) > 0 {
		r.decodeID, r.runtime = units[0].dLeg.Worker.ID, string(units[0].dLeg.Worker.Runtime)
	}
	toolName, reasonName := pl.cfg.ToolCallParser, pl.cfg.ReasoningParser
	if toolName == "" && reasonName == "" {
		toolName, reasonName = respond.ParsersForModel(j.name)
	}
	for i := range r.states {
		var parser *respond.OutputParser
		if j.rq.Route == handoff.RouteChat || j.rq.Route == handoff.RouteMessages || j.rq.Route == handoff.RouteResponses {
			var rp *respond.ReasoningParser
			var tp respond.ToolParser
			if reasonName != "" {
				rp, _ = respond.NewReasoningParser(reasonName)
			}
			if toolName != "" && hasTools(j.tools) {
				tp, _ = respond.NewToolParser(toolName, nil)
			}
			parser = respond.NewOutputParser(rp, tp)
		}
		dec := text.NewDecoder(j.model.Tokenizer, text.DecoderOptions{SkipSpecialTokens: j.skipSpecial, Stop: j.stops, StopTokenIDs: j.stopIDs})
		r.states[i] = respond.NewSampleState(i, dec, parser)
	}
	for i := range units {
		r.left[&units[i]] = units[i].width
	}
	if j.stream {
		switch j.rq.Route {
		case handoff.RouteChat:
			r.chat = respond.NewChatStream(r.meta, r.vocab())
		case handoff.RouteCompletions:
			r.cmpl = respond.NewCompletionStream(r.meta, r.vocab())
		case handoff.RouteMessages:
			r.msg = respond.NewMessageStream(r.meta)
		case handoff.RouteResponses:
			r.resp = respond.NewResponseStream(r.meta)
		default:
			n := 0
			for _, p := range j.prompts {
				n += len(p.ids)
			}
			r.gen = respond.NewGenerateStream(clientID, total, respond.Usage{PromptTokens: n})
		}
	}
	return r
}

// prefilled notes a unit's prefill complete: its prompt and cached counts are the usage of
// its prompt (a cold prompt has 0 cached).
func (r *responder) prefilled(u *unit, ev ports.GRPCEvent) {
	r.mu.Lock()
	defer r.mu.Unlock()
	i := u.prompt
	if !r.gotPrompt[i] {
		r.gotPrompt[i], r.prompt[i] = true, ev
		return
	}
	// Another sample of the same prompt (the n>1 fan-out): usage describes the client's
	// prompt once, as SMG's build_usage does (routers/grpc/common/response_formatting.rs:
	// the prompt is shared by every choice, so it is not summed). Its cached tokens are
	// what the prompt found in the cache, the fewest any sample reported: a sample whose
	// prefill ran after a sibling's hit the KV this very request wrote.
	p := &r.prompt[i]
	p.PromptTokens = max(p.PromptTokens, ev.PromptTokens)
	p.CachedTokens = min(p.CachedTokens, ev.CachedTokens)
}

// event consumes one decode message of u; done reports that every sample of u has
// finished (complete received or a gateway stop matched).
func (r *responder) event(u *unit, ev ports.GRPCEvent) (done bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	idx := u.index + ev.Index
	if idx < 0 || idx >= len(r.states) || idx >= u.index+u.width || r.finished[idx] {
		return r.left[u] == 0
	}
	st := r.states[idx]
	ids := ev.IDs
	if ev.Complete && r.j.stream {
		ids = nil // a streamed complete repeats the final delta (grpc.md §3.1)
	}
	var lps []respond.Logprob
	if len(ids) > 0 {
		lps = ev.Logprobs // one per id (none for a streamed complete: it repeats the final delta)
	}
	before := st.Tokens()
	d, raw, stopped := st.Step(ids, lps)
	if n := st.Tokens() - before; n < len(lps) {
		lps = lps[:n] // a gateway stop ended the sample inside this chunk
	}
	r.streamDelta(idx, d, raw, ids, lps)
	if ev.Complete || stopped {
		f := respond.Finish{Reason: ev.Finish, MatchedTokenID: ev.MatchedTokenID, MatchedStop: ev.MatchedStop}
		d, raw, s := st.Finish(f)
		r.streamDelta(idx, d, raw, nil, nil)
		r.samples[idx], r.finished[idx] = s, true
		r.left[u]--
		r.write(r.finishEvent(idx, s.Finish))
	}
	return r.left[u] == 0
}

func (r *responder) streamDelta(idx int, d respond.Delta, raw string, ids []uint32, lps []respond.Logprob) {
	switch {
	case r.chat != nil:
		r.write(r.chat.Delta(idx, d, lps))
	case r.cmpl != nil:
		r.write(r.cmpl.Delta(idx, raw, lps))
	case r.gen != nil && (raw != "" || len(ids) > 0):
		r.write(r.gen.Delta(idx, raw, ids))
	case r.msg != nil:
		r.open()
		r.write(r.msg.Delta(d))
	case r.resp != nil:
		r.open()
		r.write(r.resp.Delta(d))
	}
}

// open sends a Messages or Responses stream's opening events once (message_start carries
// the gateway's prompt count: the prefill's is not known yet).
func (r *responder) open() {
	if r.started {
		return
	}
	r.started = true
	if r.msg != nil {
		r.write(r.msg.Start(len(r.j.prompts[0].ids), 0))
	}
	if r.resp != nil {
		r.write(r.resp.Start())
	}
}

func (r *responder) finishEvent(idx int, f respond.Finish) []byte {
	switch {
	case r.chat != nil:
		return r.chat.Finish(idx, f)
	case r.cmpl != nil:
		return r.cmpl.Finish(idx, f)
	case r.gen != nil:
		return r.gen.Finish(idx, f)
	case r.msg != nil:
		r.open()
		return r.msg.Finish(f, r.samples[idx].CompletionTokens)
	case r.resp != nil:
		r.open()
		return r.resp.Finish(f, r.usage())
	}
	return nil
}

// write sends stream bytes, committing the SSE head on the first. The bytes are not
// flushed here: the dispatch loops call flushIdle when no further engine message is
// waiting, so the events of a burst of messages leave in one write instead of one
// flush (one syscall, one chunk) per token.
func (r *responder) write(b []byte) {
	if len(b) == 0 || !r.j.stream {
		return
	}
	if !r.committed {
		h := r.w.Header()
		h.Set("Content-Type", "text/event-stream")
		h.Set("Cache-Control", "no-cache")
		h.Set(wire.HeaderRoutedWorker, r.decodeID)
		r.w.WriteHeader(http.StatusOK)
		r.committed = true
		if r.metrics != nil {
			// smg_pd_ttft_seconds: request start to the first streamed byte.
			r.metrics.ObserveTTFT(r.j.name, r.runtime, time.Since(r.start))
		}
	}
	_, _ = r.w.Write(b)
	r.dirty = true
}

// flushIdle flushes the stream bytes written since the last flush. The dispatch loops
// call it before they wait for the next engine message, so no event waits for a later one.
func (r *responder) flushIdle() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.flush()
}

// flush is flushIdle under r.mu.
func (r *responder) flush() {
	if !r.dirty {
		return
	}
	r.dirty = false
	if f, ok := r.w.(http.Flusher); ok {
		f.Flush()
	}
}

func (r *responder) isCommitted() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.committed
}

// usage sums the request: prompt and cached tokens as each prompt's prefill computed them
// (the gateway's own count when a prefill reported none), completion tokens per sample.
func (r *responder) usage() respond.Usage {
	var u respond.Usage
	for i, p := range r.j.prompts {
		if r.gotPrompt[i] && r.prompt[i].PromptTokens > 0 {
			u.PromptTokens += r.prompt[i].PromptTokens
			u.CachedTokens += r.prompt[i].CachedTokens
		} else {
			u.PromptTokens += len(p.ids)
		}
	}
	for _, s := range r.samples {
		u.CompletionTokens += s.CompletionTokens
	}
	return u
}

// finish writes the end of a successful request: the body, or usage and [DONE].
func (r *responder) finish() {
	r.mu.Lock()
	defer r.mu.Unlock()
	u := r.usage()
	if r.j.stream {
		if r.j.includeUsage && r.chat != nil {
			r.write(r.chat.Usage(u))
		}
		if r.j.includeUsage && r.cmpl != nil {
			r.write(r.cmpl.Usage(u))
		}
		if r.msg == nil && r.resp == nil {
			r.write(respond.DoneEvent)
		}
		r.flush()
		return
	}
	var body []byte
	switch r.j.rq.Route {
	case handoff.RouteChat:
		body = respond.ChatCompletion(r.meta, r.samples, u, r.vocab())
	case handoff.RouteCompletions:
		echo := ""
		if r.j.echo && len(r.j.prompts) == 1 {
			echo = r.j.prompts[0].text
		}
		body = respond.Completion(r.meta, r.samples, u, r.vocab(), echo)
	case handoff.RouteMessages:
		body = respond.Message(r.meta, r.samples[0], u)
	case handoff.RouteResponses:
		body = respond.Response(r.meta, r.samples[0], u)
	default:
		if r.j.lp.prompt {
			for i := range r.samples {
				if p := i / max(r.j.n, 1); p < len(r.prompt) && r.gotPrompt[p] {
					r.samples[i].PromptLogprobs = r.prompt[p].PromptLogprobs
				}
			}
		}
		body = respond.Generate(r.meta.ID, r.samples, u, r.vocab())
	}
	h := r.w.Header()
	h.Set("Content-Type", "application/json")
	h.Set(wire.HeaderRoutedWorker, r.decodeID)
	r.w.WriteHeader(http.StatusOK)
	r.committed = true
	_, _ = r.w.Write(body)
}

// vocab is what renders logprob tokens (the pipeline's tokenizer) when the client asked for
// logprobs; nil otherwise (no logprobs field is filled).
func (r *responder) vocab() respond.Vocab {
	if !r.j.lp.on {
		return nil
	}
	return r.j.model.Tokenizer
}
