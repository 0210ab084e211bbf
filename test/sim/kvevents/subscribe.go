package kvevents

import "errors"

// Reasons a subscription ends or is refused. The gRPC simulator maps them onto the codes
// SMG's router acts on (model_gateway/src/worker/kv_event_monitor.rs): ErrCursorExpired
// is OUT_OF_RANGE, ErrFellBehind and ErrUndecodable are DATA_LOSS (both mean "clear this
// worker's entries and resubscribe"), ErrClosed is UNAVAILABLE.
var (
	// ErrCursorExpired: the start sequence number is older than the oldest buffered
	// batch, or beyond the next one (the publisher restarted and counts from 0 again).
	ErrCursorExpired = errors.New("kv events: replay cursor is outside the buffered batches")
	// ErrFellBehind: the subscriber did not take its batches fast enough
	// (subscriptionDepth batches waiting).
	ErrFellBehind = errors.New("kv events: subscriber fell behind")
	// ErrUndecodable: the kv-events-garbage fault ended the stream, as SMG's servicer in
	// strict mode aborts on an undecodable batch.
	ErrUndecodable = errors.New("kv events: undecodable KV event batch")
	// ErrClosed: the publisher was closed.
	ErrClosed = errors.New("kv events: publisher closed")
)

// subscriptionDepth bounds the live batches waiting for one subscription.
const subscriptionDepth = 4096

// Subscription is an in-process view of one publisher's batches (the gRPC stream's
// source): first Backlog (replayed), then C until it is closed; Err then says why.
type Subscription struct {
	// Backlog are the buffered batches with Seq >= the start sequence number, oldest
	// first (empty for a live-only subscription).
	Backlog []Batch
	// C carries the live batches that follow Backlog; it is closed when the
	// subscription ends.
	C <-chan Batch

	ch  chan Batch
	err error // set under the publisher's mu before ch is closed
	p   *Publisher
}

// Subscribe starts a subscription. start 0 means from now (the next batch published);
// start > 0 replays the buffered batches with Seq >= start and then continues live. It
// returns ErrCursorExpired when start is older than the oldest buffered batch (or the
// buffer is empty and start precedes the next batch) or beyond the next batch, and
// ErrClosed after Close.
func (p *Publisher) Subscribe(start uint64) (*Subscription, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil, ErrClosed
	}
	s := &Subscription{ch: make(chan Batch, subscriptionDepth), p: p}
	s.C = s.ch
	if start > 0 {
		oldest, ok := p.buf.oldest()
		if !ok {
			oldest = p.nextSeq
		}
		if start < oldest || start > p.nextSeq {
			return nil, ErrCursorExpired
		}
		for _, x := range p.buf.from(start) {
			s.Backlog = append(s.Backlog, x.b)
		}
	}
	p.subs[s] = struct{}{}
	return s, nil
}

// Err is why C was closed (nil while it is open, or after Close by the subscriber).
func (s *Subscription) Err() error {
	s.p.mu.Lock()
	defer s.p.mu.Unlock()
	return s.err
}

// Close ends the subscription (the subscriber went away).
func (s *Subscription) Close() {
	s.p.mu.Lock()
	defer s.p.mu.Unlock()
	if _, ok := s.p.subs[s]; ok {
		delete(s.p.subs, s)
		close(s.ch)
	}
}

func (p *Publisher) offerLocked(s *Subscription, b Batch) {
	select {
	case s.ch <- b:
	default:
		p.endLocked(s, ErrFellBehind)
	}
}

func (p *Publisher) endLocked(s *Subscription, err error) {
	if _, ok := p.subs[s]; !ok {
		return
	}
	delete(p.subs, s)
	s.err = err
	close(s.ch)
}
