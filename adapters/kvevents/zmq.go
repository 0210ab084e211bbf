package kvevents

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log"
	"strings"
	"time"

	"github.com/go-zeromq/zmq4"

	"github.com/smg-go/smg/domain/kvevent"
	"github.com/smg-go/smg/ports"
)

// ZMQConfig names one engine publisher (one DP rank) and where its events go.
type ZMQConfig struct {
	// Endpoint is the PUB endpoint to dial, "tcp://host:port" (after the DP-rank offset).
	Endpoint string
	// ReplayEndpoint is the ROUTER replay endpoint, or "" when the engine has none (then
	// a gap resets the worker's entries).
	ReplayEndpoint string
	// Topic is the SUB prefix filter; the engines' default topic is "".
	Topic string
	// Sink receives batches and resets. Required.
	Sink ports.KVEventSink
	Options
}

// ZMQ subscribes to one vLLM or SGLang KV-event publisher (reference §1.2–§1.4, §2.1):
// a SUB socket dialed to Endpoint with Topic as prefix filter, 3-frame messages [topic,
// 8-byte big-endian sequence, msgpack KVEventBatch]. A gap (seq > last+1) is recovered by
// a DEALER request ["", 8-byte start] to ReplayEndpoint, reading ["", seq, payload]
// replies until the -1 marker; without a replay endpoint, or when the replay cannot cover
// the gap, the sink is reset. A sequence going backwards is an engine restart: reset.
// Connection losses resubscribe with backoff; the sequence cursor survives them, so
// batches missed meanwhile are replayed. On first contact with a publisher that has a
// replay endpoint, the subscriber also replays whatever the engine still buffers from
// sequence 0, so the worker's cache is known from the start rather than only from the
// events after it (a suffix of the history never claims a block the engine dropped).
type ZMQ struct {
	cfg    ZMQConfig
	st     *state
	seq    tracker
	booted bool // the first-contact bootstrap was attempted
}

// NewZMQ validates cfg and builds a subscriber; Run starts it.
func NewZMQ(cfg ZMQConfig) (*ZMQ, error) {
	if cfg.Sink == nil {
		return nil, errors.New("kvevents: ZMQConfig.Sink is required")
	}
	if !strings.Contains(cfg.Endpoint, "://") {
		return nil, fmt.Errorf("kvevents: endpoint %q is not a ZMQ endpoint (tcp://host:port)", cfg.Endpoint)
	}
	cfg.Options = cfg.Options.withDefaults()
	return &ZMQ{cfg: cfg, st: newState(cfg.Options, "zmq", cfg.Endpoint)}, nil
}

// Health returns the subscription's current state. Safe for concurrent use.
func (z *ZMQ) Health() Health { return z.st.snapshot() }

// silent keeps go-zeromq's own log lines out of the gateway's log; errors surface as
// return values instead.
var silent = log.New(io.Discard, "", 0)

// Run subscribes until ctx ends, then returns ctx's error. It never returns early: dial
// failures and connection losses are retried with backoff.
func (z *ZMQ) Run(ctx context.Context) error {
	bo := z.cfg.backoff()
	for ctx.Err() == nil {
		err := z.session(ctx, bo)
		if ctx.Err() != nil {
			break
		}
		if err != nil {
			wait := bo.NextBackOff()
			select {
			case <-ctx.Done():
			case <-time.After(wait):
			}
		}
	}
	return ctx.Err()
}

// session runs one connection: dial, subscribe, receive until an error.
func (z *ZMQ) session(ctx context.Context, bo interface{ Reset() }) error {
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	sub := zmq4.NewSub(sctx, zmq4.WithDialerMaxRetries(0), zmq4.WithDialerTimeout(z.cfg.DialTimeout), zmq4.WithLogger(silent))
	defer sub.Close()
	if err := sub.SetOption(zmq4.OptionSubscribe, z.cfg.Topic); err != nil {
		return err
	}
	if err := sub.Dial(z.cfg.Endpoint); err != nil {
		z.st.dialFailed(err)
		return err
	}
	bo.Reset()
	z.st.connected(time.Now())
	for {
		msg, err := sub.Recv()
		if err != nil {
			if ctx.Err() == nil {
				z.st.disconnected(err)
			}
			return err
		}
		z.handle(ctx, msg.Frames)
	}
}

// parseFrames checks the 3-frame layout and returns the sequence and payload.
func (z *ZMQ) parseFrames(frames [][]byte) (uint64, []byte, error) {
	if len(frames) != 3 {
		return 0, nil, fmt.Errorf("message of %d frames, want [topic, seq, payload]", len(frames))
	}
	if !strings.HasPrefix(string(frames[0]), z.cfg.Topic) {
		return 0, nil, fmt.Errorf("topic %q does not match %q", frames[0], z.cfg.Topic)
	}
	if len(frames[1]) != 8 {
		return 0, nil, fmt.Errorf("sequence frame of %d bytes, want 8", len(frames[1]))
	}
	return binary.BigEndian.Uint64(frames[1]), frames[2], nil
}

func (z *ZMQ) handle(ctx context.Context, frames [][]byte) {
	seq, payload, err := z.parseFrames(frames)
	if err != nil {
		z.st.decodeError(err, time.Now())
		return
	}
	switch z.seq.classify(seq) {
	case apply:
		if !z.seq.have && seq > 0 && !z.booted && z.cfg.ReplayEndpoint != "" {
			z.booted = true
			if z.bootstrap(ctx, seq) && z.seq.classify(seq) == duplicate {
				return
			}
		}
	case duplicate:
		return
	case restart:
		z.reset(kvevent.ResetRestart, fmt.Sprintf("sequence went back from %d to %d", z.seq.last, seq))
	case gap:
		z.st.update(func(h *Health) { h.Gaps++ })
		from := z.seq.last
		if z.recover(ctx, seq) {
			z.seq.replayed(from + 1)
		} else {
			z.reset(kvevent.ResetGap, fmt.Sprintf("batches %d..%d lost", from+1, seq-1))
		}
		if v := z.seq.classify(seq); v == duplicate {
			return
		}
	}
	z.deliver(seq, payload)
}

// deliver decodes and applies one batch in order; an undecodable one is counted and its
// sequence number consumed (its events are lost, the stream goes on).
func (z *ZMQ) deliver(seq uint64, payload []byte) {
	now := time.Now()
	z.seq.accept(seq)
	b, err := DecodeBatch(payload)
	if err != nil {
		z.st.decodeError(fmt.Errorf("seq %d: %w", seq, err), now)
		z.st.update(func(h *Health) { h.HasSeq, h.LastSeq = true, seq })
		return
	}
	b.Seq = seq
	// Health first: whoever sees the batch in the sink (the index, a test) then also sees
	// it counted in Health.
	z.st.applied(seq, b.Timestamp, now)
	z.cfg.Sink.ApplyKVBatch(b)
}

func (z *ZMQ) reset(r kvevent.ResetReason, why string) {
	z.seq = tracker{}
	z.st.update(func(h *Health) { h.Resets++; h.HasSeq = false })
	z.st.log.Warn("kv events: dropping the worker's entries", "reason", r, "detail", why)
	z.cfg.Sink.ResetKV(r)
}
