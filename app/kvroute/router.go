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
	// Now is the clock of the speculative entries; nil = time.Now.
	Now func() time.Time
}

// Router is the shared KV-event view of the gRPC workers: it implements policy.KVPrefixes
// and runs one subscription per worker between Start and Stop. Safe for concurrent use.
type Router struct {
	opt   Options
	index *kvindex.Index
	spec  *speculation
	log   *slog.Logger

	mu      sync.Mutex
	ctx     context.Context // nil before Start and after Stop
	subs    map[string]*sub // by worker URL
	pending ports.WorkerStore
	wg      sync.WaitGroup
}

// sub is one worker's running subscription.
type sub struct {
	engineID  string
	g         *kvevents.GRPC
	cancel    context.CancelFunc
	done      chan struct{}
	blockSize atomic.Int64
	// disabled is set once the engine answered Unimplemented: the worker stays on
	// approximate routing and does not count for Active.
	disabled atomic.Bool
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
	log := o.Subscriber.Logger
	if log == nil {
		log = slog.Default()
	}
	return &Router{opt: o, index: kvindex.New(kvindex.Options{MaxBlocks: o.MaxBlocks}),
		spec: newSpeculation(o.SpeculativeTTL, o.MaxBlocks, o.Now), log: log, subs: map[string]*sub{}}, nil
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
	r.ctx = context.Background()
	store := r.pending
	r.mu.Unlock()
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
	subs := r.subs
	r.subs = map[string]*sub{}
	r.mu.Unlock()
	for _, s := range subs {
		s.cancel()
	}
	r.wg.Wait()
}

// eligible: a gRPC worker with an event service, not a DP-rank expansion.
func eligible(w *worker.Live) bool {
	return w.Mode == worker.ConnGRPC && w.DPRank == nil && w.Role != worker.RoleEncode
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
	client, err := r.opt.Dial(w.Worker)
	if err != nil {
		r.log.Debug("kv events: worker not subscribed", "worker", w.URL, "err", err)
		return
	}
	s := &sub{engineID: w.KVEngineID, done: make(chan struct{})}
	model := ""
	if len(w.Models) == 1 {
		model = w.Models[0]
	}
	g, err := kvevents.NewGRPC(kvevents.GRPCConfig{Client: client, Name: w.URL, Options: r.opt.Subscriber,
		Sink: sink{r: r, s: s, ws: kvindex.WorkerSink{Index: r.index, Worker: w.URL, Model: model}}})
	if err != nil {
		r.log.Warn("kv events: worker not subscribed", "worker", w.URL, "err", err)
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
			s.disabled.Store(true)
			r.log.Info("kv events: worker stays on approximate routing", "worker", w.URL)
		}
	}()
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
	r.spec.drop(url)
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

// Live reports whether url's stream is subscribed and connected.
func (r *Router) Live(url string) bool {
	h, ok := r.Health(url)
	return ok && h.Connected && !h.Disabled
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

// Speculate records tokens as held by url for SpeculativeTTL, in the block size its
// events use (DefaultBlockSize before the first).
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
	r.spec.add(url, model, bs, tokens)
}

// sink feeds one worker's stream into the index, learns its block size, and drops its
// speculative entries when the engine's cache is cleared or the stream reset.
type sink struct {
	r  *Router
	s  *sub
	ws kvindex.WorkerSink
}

func (k sink) ApplyKVBatch(b kvevent.Batch) {
	for i := range b.Events {
		ev := &b.Events[i]
		switch {
		case ev.Kind == kvevent.Stored && ev.BlockSize > 0:
			k.s.blockSize.Store(int64(ev.BlockSize))
		case ev.Kind == kvevent.Cleared:
			k.r.spec.drop(k.ws.Worker)
		}
	}
	k.ws.ApplyKVBatch(b)
}

func (k sink) ResetKV(reason kvevent.ResetReason) {
	k.ws.ResetKV(reason)
	k.r.spec.drop(k.ws.Worker)
}
