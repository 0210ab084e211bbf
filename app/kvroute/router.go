package kvroute

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/smg-go/smg/adapters/kvevents"
	"github.com/smg-go/smg/domain/kvevent"
	"github.com/smg-go/smg/domain/kvindex"
	"github.com/smg-go/smg/domain/policy"
	"github.com/smg-go/smg/domain/worker"
	"github.com/smg-go/smg/ports"
)

// DefaultBlockSize is the block size of a speculative entry for a worker whose stream has
// not told its own yet (vLLM's default block size).
const DefaultBlockSize = 16

// Dialer returns the SubscribeKvEvents client of a gRPC worker (kvevents.ClientFor over
// the worker's pooled channel). An error leaves the worker unsubscribed until its next
// registry event.
type Dialer func(w worker.Worker) (kvevents.KvEventsClient, error)

// Options configure a Router.
type Options struct {
	// Dial opens a worker's event client. Required.
	Dial Dialer
	// MaxBlocks bounds the index's (worker, block) entries (kvindex.Options.MaxBlocks);
	// the speculative entries get the same bound. 0 = kvindex.DefaultMaxBlocks.
	MaxBlocks int
	// SpeculativeTTL is the life of a speculative entry; 0 = DefaultSpeculativeTTL,
	// negative = none.
	SpeculativeTTL time.Duration
	// Subscriber carries the subscriptions' backoff and logger.
	Subscriber kvevents.Options
	// Now is the clock of the speculative entries and of stall detection; nil = time.Now.
	Now func() time.Time
	// StallAfter is how long a connected stream may stay silent after a request was routed
	// to its worker before the worker is routed approximately (0 = DefaultStallAfter).
	StallAfter time.Duration
	// Tokenizer reports whether the gateway can tokenize a model's prompts before
	// selection (the text registry has it loaded); nil = always (for KVStream only).
	Tokenizer func(model string) bool
	// Shared, when set, carries the speculative entries to and from the other gateway
	// replicas (Redis with --redis-url); nil keeps them per replica.
	Shared ports.KVShare
}

// DefaultStallAfter is Options.StallAfter's default. Engines publish every scheduler step
// while they compute, but a prefill queued behind others publishes nothing until it runs:
// on an overloaded fleet (TTFT of seconds) a few seconds' silence is not a stall.
const DefaultStallAfter = 30 * time.Second

// Router is the shared KV-event view of the gRPC workers: it implements policy.KVPrefixes
// and runs one subscription per worker between Start and Stop. Safe for concurrent use.
type Router struct {
	opt   Options
	index *kvindex.Index
	spec  *speculation
	share *sharer // nil without Options.Shared
	cache cacheBook
	log   *slog.Logger

	mu      sync.Mutex
	ctx     context.Context // nil before Start and after Stop
	subs    map[string]*sub // by worker URL
	pending ports.WorkerStore
	wg      sync.WaitGroup
	// stopShare ends the sharer's goroutines (and is the parent of every subscription).
	stopShare context.CancelFunc
}

// stream is one worker's subscription: *kvevents.GRPC or *kvevents.ZMQ.
type stream interface {
	Run(ctx context.Context) error
	Health() kvevents.Health
}

// sub is one worker's running subscription.
type sub struct {
	engineID  string
	g         stream
	cancel    context.CancelFunc
	done      chan struct{}
	blockSize atomic.Int64
	// disabled is set once the engine answered Unimplemented: the worker stays on
	// approximate routing and does not count for Active.
	disabled atomic.Bool
	// waiting is when (unix ns) the oldest request routed here since the last applied batch
	// was routed; 0 when a batch arrived since. A live engine publishes the blocks of what
	// it computed, so a stream that stays silent past StallAfter with requests routed to
	// it is stalled: the worker falls back to approximate routing until a batch arrives.
	waiting atomic.Int64
	// stalled remembers that the stall was logged (one line per stall).
	stalled atomic.Bool
}

var _ policy.KVPrefixes = (*Router)(nil)

// New builds a Router; Watch connects it to the registry and Start runs it.
func New(o Options) (*Router, error) {
	if o.Dial == nil {
		return nil, errors.New("kvroute: Options.Dial is required")
	}
	if o.SpeculativeTTL == 0 {
		o.SpeculativeTTL = DefaultSpeculativeTTL
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.StallAfter <= 0 {
		o.StallAfter = DefaultStallAfter
	}
	log := o.Subscriber.Logger
	if log == nil {
		log = slog.Default()
	}
	r := &Router{opt: o, index: kvindex.New(kvindex.Options{MaxBlocks: o.MaxBlocks}),
		spec: newSpeculation(o.SpeculativeTTL, o.MaxBlocks, o.Now), log: log, subs: map[string]*sub{}}
	if o.Shared != nil {
		r.share = newSharer(o.Shared, r, log)
	}
	return r, nil
}

// Index is the shared block index (for stats and tests).
func (r *Router) Index() *kvindex.Index { return r.index }

// Watch follows store: registered workers are subscribed (after Start), removed ones
// dropped. Call it once, before Start.
func (r *Router) Watch(store ports.WorkerStore) {
	store.Subscribe(func(ev ports.WorkerEvent) {
		if ev.Worker == nil {
			return
		}
		switch ev.Kind {
		case ports.EventRemoved:
			cur, err := store.GetByURL(ev.Worker.URL)
			if err != nil || cur.KVEngineID != ev.Worker.KVEngineID {
				r.drop(ev.Worker.URL)
			}
		default:
			r.ensure(ev.Worker)
		}
	})
	r.mu.Lock()
	r.pending = store
	r.mu.Unlock()
}

// Start subscribes every worker registered so far; later ones are subscribed as they come.
func (r *Router) Start() {
	r.mu.Lock()
	ctx, cancel := context.WithCancel(context.Background())
	r.ctx, r.stopShare = ctx, cancel
	store := r.pending
	r.mu.Unlock()
	if r.share != nil {
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			r.share.run(ctx)
		}()
	}
	if store != nil {
		for _, w := range store.List() {
			r.ensure(w)
		}
	}
}

// Stop ends every subscription and waits for them.
func (r *Router) Stop() {
	r.mu.Lock()
	r.ctx = nil
	if r.stopShare != nil {
		r.stopShare()
	}
	subs := r.subs
	r.subs = map[string]*sub{}
	r.mu.Unlock()
	for _, s := range subs {
		s.cancel()
	}
	r.wg.Wait()
}

// eligible: a worker whose registration names a ZMQ events endpoint (any transport, DP
// ranks included: rank r dials port + r), or a gRPC worker with an event service that is
// not a DP-rank expansion (its one stream carries every rank's events). A gRPC worker whose
// runtime is not detected yet waits for the registry's swap-in of the detected worker (an
// attempt now could only fail and log a WARN about runtime "unspecified"); TRT-LLM and MLX
// servicers have no SubscribeKvEvents.
func eligible(w *worker.Live) bool {
	if w.Role == worker.RoleEncode {
		return false
	}
	if _, ok, _ := kvevents.ResolveZMQ(w.Worker); ok {
		return true
	}
	if w.Mode != worker.ConnGRPC || w.DPRank != nil {
		return false
	}
	switch w.Runtime {
	case worker.RuntimeSGLang, worker.RuntimeVLLM, worker.RuntimeTokenSpeed:
		return true
	}
	return false
}

// ensure subscribes w unless it already is with the same engine id; a changed engine id
// drops the old subscription and the worker's entries first.
func (r *Router) ensure(w *worker.Live) {
	if !eligible(w) {
		return
	}
	r.mu.Lock()
	if r.ctx == nil {
		r.mu.Unlock()
		return
	}
	if s := r.subs[w.URL]; s != nil {
		if s.engineID == w.KVEngineID {
			r.mu.Unlock()
			return
		}
		r.mu.Unlock()
		r.drop(w.URL)
		r.mu.Lock()
		if r.ctx == nil || r.subs[w.URL] != nil {
			r.mu.Unlock()
			return
		}
	}
	defer r.mu.Unlock()
	s := &sub{engineID: w.KVEngineID, done: make(chan struct{})}
	model := ""
	if len(w.Models) == 1 {
		model = w.Models[0]
	}
	g, err := r.open(w, sink{r: r, s: s, ws: kvindex.WorkerSink{Index: r.index, Worker: w.URL, Model: model}})
	if err != nil {
		r.log.Warn("kv events: worker not subscribed, it stays on approximate routing", "worker", w.URL, "err", err)
		return
	}
	s.g = g
	ctx, cancel := context.WithCancel(r.ctx)
	s.cancel = cancel
	r.subs[w.URL] = s
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		defer close(s.done)
		if err := g.Run(ctx); errors.Is(err, kvevents.ErrDisabled) {
			s.disabled.Store(true) // the subscriber logged it, naming the endpoint
		}
	}()
}

// open builds w's subscription: ZMQ when its labels name an endpoint, else gRPC.
func (r *Router) open(w *worker.Live, k sink) (stream, error) {
	eps, ok, err := kvevents.ResolveZMQ(w.Worker)
	if err != nil {
		return nil, err
	}
	if ok {
		return kvevents.NewZMQ(kvevents.ZMQConfig{Endpoint: eps.Endpoint, ReplayEndpoint: eps.ReplayEndpoint,
			Topic: eps.Topic, Sink: k, Options: r.opt.Subscriber})
	}
	client, err := r.opt.Dial(w.Worker)
	if err != nil {
		return nil, err
	}
	return kvevents.NewGRPC(kvevents.GRPCConfig{Client: client, Name: w.URL, Options: r.opt.Subscriber, Sink: k})
}

// drop stops url's subscription and forgets its entries.
func (r *Router) drop(url string) {
	r.mu.Lock()
	s := r.subs[url]
	delete(r.subs, url)
	r.mu.Unlock()
	if s != nil {
		s.cancel()
		<-s.done
	}
	r.index.RemoveWorker(url)
	r.spec.forget(url)
	r.cache.m.Delete(url)
}

// Health returns url's subscription health, false when it has none.
func (r *Router) Health(url string) (kvevents.Health, bool) {
	r.mu.Lock()
	s := r.subs[url]
	r.mu.Unlock()
	if s == nil {
		return kvevents.Health{}, false
	}
	return s.g.Health(), true
}

// Active reports whether any worker is subscribed and its engine has not refused the stream
// (Unimplemented; a stream that is down still counts): the dispatcher tokenizes before
// selection only then, so a gRPC fleet whose engines publish no events never pays for it.
func (r *Router) Active() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, s := range r.subs {
		if !s.disabled.Load() {
			return true
		}
	}
	return false
}

// Live reports whether url's stream is subscribed, connected and not stalled (silent for
// StallAfter while requests were routed to the worker): only then are its matches trusted.
func (r *Router) Live(url string) bool {
	r.mu.Lock()
	s := r.subs[url]
	r.mu.Unlock()
	if s == nil {
		return false
	}
	h := s.g.Health()
	if !h.Connected || h.Disabled {
		return false
	}
	if w := s.waiting.Load(); w != 0 && r.opt.Now().Sub(time.Unix(0, w)) > r.opt.StallAfter {
		if !s.stalled.Swap(true) {
			r.log.Warn("kv events: stream stalled, worker falls back to approximate routing until its next batch",
				"worker", url, "transport", h.Transport, "endpoint", h.Endpoint, "silent_for", r.opt.Now().Sub(time.Unix(0, w)).Round(time.Millisecond),
				"last_seq", h.LastSeq)
		}
		return false
	}
	return true
}

// Stalled reports whether url's connected stream is stalled (see Live).
func (r *Router) Stalled(url string) bool {
	r.mu.Lock()
	s := r.subs[url]
	r.mu.Unlock()
	if s == nil {
		return false
	}
	w := s.waiting.Load()
	return w != 0 && r.opt.Now().Sub(time.Unix(0, w)) > r.opt.StallAfter
}

// Matched merges the index's and the speculative entries' matches under model and under
// "" (workers serving several models, or a wildcard, apply their events under "").
func (r *Router) Matched(model string, tokens []uint32) map[string]int {
	out := map[string]int{}
	put := func(hits map[string]kvindex.Hit) {
		for url, h := range hits {
			if t := h.Tokens(); t > out[url] {
				out[url] = t
			}
		}
	}
	put(r.index.Match(model, tokens))
	put(r.spec.match(model, tokens))
	if model != "" {
		put(r.index.Match("", tokens))
		put(r.spec.match("", tokens))
	}
	return out
}

// Speculate records tokens as held by url until url's events store them (or for at most
// SpeculativeTTL), unless its events already hold every full block, in the block size its
// events use (DefaultBlockSize before the first), publishes the entry to the other
// replicas (Options.Shared), and starts the stall clock of url's stream.
func (r *Router) Speculate(url, model string, tokens []uint32) {
	r.mu.Lock()
	s := r.subs[url]
	r.mu.Unlock()
	if s == nil {
		return
	}
	bs := int(s.blockSize.Load())
	if bs <= 0 {
		bs = DefaultBlockSize
	}
	if full := len(tokens) / bs * bs; full == 0 || r.holds(url, model, tokens[:full]) {
		// The worker's events already hold every full block: the engine stores nothing new,
		// so no batch would confirm an entry (it would only expire) and none is expected.
		return
	}
	s.waiting.CompareAndSwap(0, r.opt.Now().UnixNano())
	r.spec.add(url, model, bs, tokens)
	if r.share != nil && len(tokens) >= bs && r.opt.SpeculativeTTL > 0 {
		r.share.offer(kvevent.Shared{Worker: url, Model: model, BlockSize: bs, Tokens: tokens,
			Expires: time.Now().Add(r.opt.SpeculativeTTL)}) // wall clock: other replicas read it
	}
}

// addShared records an entry another replica published as a local speculative entry, for
// a worker this replica subscribes to (the TTL runs from now). false when it was not.
func (r *Router) addShared(e kvevent.Shared) bool {
	r.mu.Lock()
	s := r.subs[e.Worker]
	r.mu.Unlock()
	if s == nil || e.BlockSize <= 0 {
		return false
	}
	if full := len(e.Tokens) / e.BlockSize * e.BlockSize; full > 0 && r.holds(e.Worker, e.Model, e.Tokens[:full]) {
		return true // held already (see Speculate)
	}
	r.spec.add(e.Worker, e.Model, e.BlockSize, e.Tokens)
	return true
}

// ShareStats reports the sharing of speculative entries; ok is false without Options.Shared.
func (r *Router) ShareStats() (st ShareStats, ok bool) {
	if r.share == nil {
		return ShareStats{}, false
	}
	return r.share.stats(), true
}

// sink feeds one worker's stream into the index, learns its block size, and drops its
// speculative entries when the engine's cache is cleared or the stream reset.
type sink struct {
	r  *Router
	s  *sub
	ws kvindex.WorkerSink
}

func (k sink) ApplyKVBatch(b kvevent.Batch) {
	k.s.waiting.Store(0)
	if k.s.stalled.Swap(false) {
		k.r.log.Info("kv events: stream resumed, worker back on event routing", "worker", k.ws.Worker, "seq", b.Seq)
	}
	stored := false
	for i := range b.Events {
		ev := &b.Events[i]
		switch {
		case ev.Kind == kvevent.Stored && ev.BlockSize > 0:
			k.s.blockSize.Store(int64(ev.BlockSize))
			stored = true
		case ev.Kind == kvevent.Cleared:
			k.r.spec.drop(k.ws.Worker)
		}
	}
	k.ws.ApplyKVBatch(b)
	if stored {
		w := k.ws.Worker
		k.r.spec.confirm(w, func(model string, tokens []uint32) bool { return k.r.holds(w, model, tokens) })
	}
}

// holds reports whether the event index holds, for worker, every full block of tokens
// under model (or under "", where a multi-model worker's events go): the check that ends a
// speculative entry, and that makes none for a prompt already held.
func (r *Router) holds(worker, model string, tokens []uint32) bool {
	full := func(ns string) bool {
		h, ok := r.index.Match(ns, tokens)[worker]
		return ok && h.BlockSize > 0 && h.Tokens()+h.BlockSize > len(tokens)
	}
	return full(model) || (model != "" && full(""))
}

func (k sink) ResetKV(reason kvevent.ResetReason) {
	k.ws.ResetKV(reason)
	k.r.spec.drop(k.ws.Worker)
}

var _ ports.KVStreams = (*Router)(nil)

// KVStream is url's subscription state for /workers and smg doctor; models are the
// worker's models (the tokenizer check uses the first, Options.Tokenizer).
func (r *Router) KVStream(url string, models []string) ports.KVStreamState {
	st := ports.KVStreamState{State: "none", Routing: ports.KVRoutingApproximate, Tokenizer: true}
	if r.opt.Tokenizer != nil && len(models) > 0 {
		st.Tokenizer = r.opt.Tokenizer(models[0])
	}
	r.mu.Lock()
	s := r.subs[url]
	r.mu.Unlock()
	if s == nil {
		st.Reason = "no KV-event subscription: an HTTP worker needs the kv_events_endpoint label (or the smg.ai/kv-events-endpoint annotation); a gRPC worker needs SubscribeKvEvents"
		return st
	}
	h := s.g.Health()
	st.Transport, st.Endpoint, st.HasSeq, st.LastSeq = h.Transport, h.Endpoint, h.HasSeq, h.LastSeq
	st.Gaps, st.Resets, st.DecodeErrors = h.Gaps, h.Resets, h.DecodeErrors
	st.LagMS = float64(h.Lag.Microseconds()) / 1000
	switch {
	case h.Disabled || s.disabled.Load():
		st.State, st.Reason = "disabled", "the engine does not offer the KV-event stream"
	case !h.Connected:
		st.State, st.Reason = "connecting", "the KV-event stream is not connected"
		if h.LastError != "" {
			st.Reason += ": " + h.LastError
		}
	case r.Stalled(url):
		st.State, st.Reason = "stalled", "the KV-event stream sent nothing since requests were routed to the worker"
	default:
		st.State = "live"
		if st.Tokenizer {
			st.Routing = ports.KVRoutingEvents
		} else {
			st.Reason = "the gateway has no tokenizer for the model yet (--tokenizer-path, --model-path, or a gRPC worker's): prompts are not tokenized before selection"
		}
	}
	return st
}
