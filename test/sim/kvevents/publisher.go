package kvevents

import (
	"context"
	"encoding/binary"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zeromq/zmq4"

	"github.com/smg-go/smg/test/sim/kvcache"
)

// LeakedGoroutine is the function of the one goroutine each closed PUB socket leaves
// behind: zmq4 v0.17.0's socket Close never closes the PUB writer (pub.go pubMWriter.run
// waits forever). Tests that check for goroutine leaks ignore it
// (goleak.IgnoreAnyFunction(kvevents.LeakedGoroutine)).
const LeakedGoroutine = "github.com/go-zeromq/zmq4.(*pubMWriter).run"

// Options configure one rank's [Publisher].
type Options struct {
	// Config is the parsed --kv-events-config; it must be enabled (publisher "zmq").
	Config Config
	// Encoding is the payload shape; "" is EncodingVLLM.
	Encoding Encoding
	// DPRank is the data-parallel rank: the endpoints get port + DPRank
	// ([OffsetEndpoint]) and every batch carries it (data_parallel_rank / attn_dp_rank).
	DPRank int
	// BindHost replaces the "*" of a bound tcp endpoint ("tcp://*:5557" binds
	// BindHost:5557), so a simulator whose listeners are all on loopback keeps its event
	// sockets there too; "" binds as the endpoint says (all interfaces).
	BindHost string
	// Now is the clock of batch timestamps; nil is time.Now.
	Now func() time.Time
}

// Batch is one published KVEventBatch, as the gRPC stream carries it.
type Batch struct {
	// Seq is the batch's sequence number: 0 for the first batch of this publisher
	// (rank), then +1 per batch.
	Seq uint64
	// TS is the batch time in seconds since the Unix epoch (the engines' time.time()).
	TS float64
	// DPRank is the publishing data-parallel rank.
	DPRank int
	// FirstEventID is the id of Events[0]; the next events count up from it. Ids start
	// at 1 per publisher and are the same on a live stream and on a replay.
	FirstEventID uint64
	// Events are the cache's events, in order (shared: do not modify).
	Events []kvcache.Event
}

// Counts are a publisher's counters.
type Counts struct {
	// Published counts batches given a sequence number (sent live, withheld by a fault,
	// or both); Dropped counts batches refused because max_queue_size batches were
	// waiting.
	Published, Dropped uint64
}

type entry struct {
	b       Batch
	payload []byte
}

type queued struct {
	ts     float64
	events []kvcache.Event
}

// Publisher is one rank's KV event publisher: a ZMQ PUB socket, an optional ZMQ ROUTER
// replay socket over a buffer of the last buffer_steps batches, and in-process
// subscriptions for the gRPC stream. It implements [kvcache.Sink]. Close stops it.
type Publisher struct {
	opts   Options
	topic  []byte
	qmu    sync.Mutex
	q      []queued      // batches waiting for run, at most max_queue_size (0: no bound)
	wake   chan struct{} // signalled (capacity 1) when q gains a batch
	pub    zmq4.Socket
	router zmq4.Socket
	ep     string // effective PUB endpoint (the bound address when bound)
	repEP  string // effective ROUTER endpoint, "" without replay

	mu          sync.Mutex
	nextSeq     uint64
	nextEventID uint64
	buf         ring
	subs        map[*Subscription]struct{}
	faults      faultState
	closed      bool

	published, dropped atomic.Uint64
	done               chan struct{} // closed by Close: run drains the queue and returns
	ran                chan struct{} // closed when run has returned
	wg                 sync.WaitGroup
	closeOnce          sync.Once
}

var _ kvcache.Sink = (*Publisher)(nil)

// NewPublisher opens the sockets of one rank and starts publishing. A bound endpoint
// must be free; a connected PUB endpoint is dialled in the background until it answers
// (as libzmq connects asynchronously). Errors: a disabled config, a bad encoding or
// endpoint, a failed bind.
func NewPublisher(o Options) (*Publisher, error) {
	if !o.Config.Enabled() {
		return nil, fmt.Errorf("kv events: publisher %q publishes nothing", o.Config.Publisher)
	}
	if o.Encoding == "" {
		o.Encoding = EncodingVLLM
	}
	if err := o.Encoding.valid(); err != nil {
		return nil, err
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	ep, err := OffsetEndpoint(o.Config.Endpoint, o.DPRank)
	if err != nil {
		return nil, err
	}
	repEP, err := OffsetEndpoint(o.Config.ReplayEndpoint, o.DPRank)
	if err != nil {
		return nil, err
	}
	p := &Publisher{
		opts:        o,
		topic:       []byte(o.Config.Topic),
		wake:        make(chan struct{}, 1),
		nextEventID: 1,
		buf:         ring{max: o.Config.BufferSteps},
		subs:        map[*Subscription]struct{}{},
		done:        make(chan struct{}),
		ran:         make(chan struct{}),
	}
	p.pub = zmq4.NewPub(context.Background(), zmq4.WithDialerMaxRetries(-1))
	if o.Config.HWM > 0 {
		if err := p.pub.SetOption(zmq4.OptionHWM, o.Config.HWM); err != nil {
			_ = p.pub.Close()
			return nil, fmt.Errorf("kv events: pub hwm: %w", err)
		}
	}
	if binds(ep) {
		if err := p.pub.Listen(o.bindable(ep)); err != nil {
			_ = p.pub.Close()
			return nil, fmt.Errorf("kv events: bind %s: %w", ep, err)
		}
		p.ep = effective(o.bindable(ep), p.pub)
	} else {
		p.ep = ep
		p.wg.Add(1)
		go func() { defer p.wg.Done(); _ = p.pub.Dial(ep) }()
	}
	if repEP != "" {
		p.router = zmq4.NewRouter(context.Background())
		if err := p.router.Listen(o.bindable(repEP)); err != nil {
			_ = p.pub.Close()
			_ = p.router.Close()
			p.wg.Wait()
			return nil, fmt.Errorf("kv events: bind replay %s: %w", repEP, err)
		}
		p.repEP = effective(o.bindable(repEP), p.router)
		p.wg.Add(1)
		go func() { defer p.wg.Done(); p.serveReplay() }()
	}
	go func() { defer close(p.ran); p.run() }()
	return p, nil
}

func (o Options) bindable(ep string) string {
	if o.BindHost != "" && strings.HasPrefix(ep, "tcp://*:") {
		host := o.BindHost
		if strings.Contains(host, ":") {
			host = "[" + host + "]"
		}
		return "tcp://" + host + ep[len("tcp://*"):]
	}
	return ep
}

// effective is the endpoint a peer dials: the listener's address for tcp (so port 0
// reports the port picked).
func effective(ep string, s zmq4.Socket) string {
	if strings.HasPrefix(ep, "tcp://") && s.Addr() != nil {
		return "tcp://" + s.Addr().String()
	}
	return ep
}

// Endpoint is the PUB endpoint in effect: for a bound tcp endpoint the listening
// address ("tcp://127.0.0.1:5557"), else the configured endpoint with its rank offset.
func (p *Publisher) Endpoint() string { return p.ep }

// ReplayEndpoint is the ROUTER endpoint in effect, "" without replay.
func (p *Publisher) ReplayEndpoint() string { return p.repEP }

// DPRank is the rank this publisher stamps on its batches.
func (p *Publisher) DPRank() int { return p.opts.DPRank }

// Counts returns the publisher's counters.
func (p *Publisher) Counts() Counts {
	return Counts{Published: p.published.Load(), Dropped: p.dropped.Load()}
}

// Publish queues events as one batch (kvcache.Sink). It never blocks: with
// max_queue_size batches already waiting (0 = no bound, as Python's Queue(maxsize=0)), or
// after Close, the batch is dropped and counted. An empty slice publishes nothing.
func (p *Publisher) Publish(events []kvcache.Event) {
	if len(events) == 0 {
		return
	}
	q := queued{ts: float64(p.opts.Now().UnixNano()) / 1e9, events: append([]kvcache.Event(nil), events...)}
	select {
	case <-p.done:
		p.dropped.Add(1)
		return
	default:
	}
	p.qmu.Lock()
	if limit := p.opts.Config.MaxQueueSize; limit > 0 && len(p.q) >= limit {
		p.qmu.Unlock()
		p.dropped.Add(1)
		return
	}
	p.q = append(p.q, q)
	p.qmu.Unlock()
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// run emits queued batches in order until Close, then drains what is left.
func (p *Publisher) run() {
	for {
		select {
		case <-p.wake:
			p.drain()
		case <-p.done:
			p.drain()
			return
		}
	}
}

// drain emits every waiting batch.
func (p *Publisher) drain() {
	for {
		p.qmu.Lock()
		batch := p.q
		p.q = nil
		p.qmu.Unlock()
		if len(batch) == 0 {
			return
		}
		for _, q := range batch {
			p.emit(q)
		}
	}
}

// garbagePayload is msgpack's never-used byte 0xc1: no decoder accepts it.
var garbagePayload = []byte{0xc1}

// emit numbers one batch, keeps it for replay and, unless a fault withholds it, sends it
// on the PUB socket and to the live subscriptions.
func (p *Publisher) emit(q queued) {
	payload, err := encodeBatch(p.opts.Encoding, q.ts, q.events, p.opts.DPRank)
	if err != nil {
		p.dropped.Add(1)
		return
	}
	p.mu.Lock()
	b := Batch{Seq: p.nextSeq, TS: q.ts, DPRank: p.opts.DPRank, FirstEventID: p.nextEventID, Events: q.events}
	p.nextSeq++
	p.nextEventID += uint64(len(q.events))
	p.buf.push(entry{b: b, payload: payload})
	live, garbage := p.faults.take()
	if live {
		for s := range p.subs {
			if garbage {
				p.endLocked(s, ErrUndecodable)
			} else {
				p.offerLocked(s, b)
			}
		}
	}
	p.mu.Unlock()
	p.published.Add(1)
	if !live {
		return
	}
	if garbage {
		payload = garbagePayload
	}
	// The PUB socket queues up to hwm messages and drops beyond, like libzmq's PUB.
	_ = p.pub.Send(zmq4.NewMsgFrom(p.topic, seqBytes(int64(b.Seq)), payload))
}

func seqBytes(seq int64) []byte {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(seq))
	return b[:]
}

// Close stops publishing: queued batches are still sent, then the sockets close and
// every subscription ends with ErrClosed. It always returns nil.
func (p *Publisher) Close() error {
	p.closeOnce.Do(func() {
		close(p.done)
		<-p.ran
		_ = p.pub.Close()
		if p.router != nil {
			_ = p.router.Close()
		}
		p.wg.Wait()
		p.mu.Lock()
		p.closed = true
		for s := range p.subs {
			p.endLocked(s, ErrClosed)
		}
		p.mu.Unlock()
	})
	return nil
}

// ring keeps the last max entries; its storage grows up to max as entries arrive.
type ring struct {
	e        []entry
	max      int
	start, n int
}

func (r *ring) push(x entry) {
	if r.max <= 0 {
		return
	}
	if len(r.e) < r.max {
		r.e = append(r.e, x)
		r.n++
		return
	}
	r.e[r.start] = x
	r.start = (r.start + 1) % len(r.e)
}

// from returns the kept entries with seq >= seq, oldest first.
func (r *ring) from(seq uint64) []entry {
	var out []entry
	for i := 0; i < r.n; i++ {
		if x := r.e[(r.start+i)%len(r.e)]; x.b.Seq >= seq {
			out = append(out, x)
		}
	}
	return out
}

// oldest is the lowest kept sequence number; ok is false when nothing is kept.
func (r *ring) oldest() (seq uint64, ok bool) {
	if r.n == 0 {
		return 0, false
	}
	return r.e[r.start].b.Seq, true
}

// SubscribedTopics lists the topic prefixes the PUB socket's connected subscribers asked
// for, sorted. A PUB drops what no subscriber has asked for yet, so a test (or a harness)
// waits for its subscriber's topic here before publishing what it must receive.
func (p *Publisher) SubscribedTopics() []string {
	if t, ok := p.pub.(zmq4.Topics); ok {
		return t.Topics()
	}
	return nil
}
