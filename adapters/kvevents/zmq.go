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
// a DEALER request ["", 8-byte start] to ReplayEndpoint, reading [“”, seq, payload]
// replies until the -1 marker; without a replay endpoint, or when the replay cannot cover
// the gap, the sink is reset. A sequence going backwards is an engine restart: reset.
// Connection losses resubscribe with backoff; the sequence cursor survives them, so
// batches missed meanwhile are replayed.
type ZMQ struct {
	cfg ZMQConfig
	st  *state
	seq tracker
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
	case duplicate:
		return
	case restart:
		z.reset(kvevent.ResetRestart, fmt.Sprintf("sequence went back from %d to %d", z.seq.last, seq))
	case gap:
		z.st.update(func(h *Health) { h.Gaps++ })
		from := z.seq.last
		if z.recover(ctx, seq) {
			z.seq.replayed(from)
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
	z.cfg.Sink.ApplyKVBatch(b)
	z.st.applied(seq, b.Timestamp, now)
}

func (z *ZMQ) reset(r kvevent.ResetReason, why string) {
	z.seq = tracker{}
	z.st.update(func(h *Health) { h.Resets++; h.HasSeq = false })
	z.st.log.Warn("kv events: dropping the worker's entries", "reason", r, "detail", why)
	z.cfg.Sink.ResetKV(r)
}

// endMarker is the replay's end-of-stream sequence: -1 as a signed 8-byte value.
const endMarker = ^uint64(0)

// recover replays the batches after the tracker's last one through the replay endpoint.
// It applies them only when they cover every batch before upTo without a hole, counting
// the replay first so Health never shows the replayed sequence numbers without it; it
// reports whether it did.
func (z *ZMQ) recover(ctx context.Context, upTo uint64) bool {
	if z.cfg.ReplayEndpoint == "" {
		return false
	}
	type replayed struct {
		seq     uint64
		payload []byte
	}
	start := z.seq.last + 1
	var got []replayed
	err := z.replay(ctx, start, func(seq uint64, payload []byte) error {
		if want := start + uint64(len(got)); seq != want {
			if seq < want {
				return nil // below the cursor: not needed
			}
			return fmt.Errorf("replay jumped from %d to %d", want-1, seq)
		}
		got = append(got, replayed{seq, payload})
		return nil
	})
	if err == nil && start+uint64(len(got)) < upTo {
		err = fmt.Errorf("replay ended at %d, before %d", start+uint64(len(got)), upTo)
	}
	if err != nil {
		z.st.update(func(h *Health) { h.LastError = err.Error() })
		z.st.log.Warn("kv events: replay failed", "replay_endpoint", z.cfg.ReplayEndpoint, "from", start, "err", err)
		return false
	}
	z.st.update(func(h *Health) { h.Replays++ })
	for _, r := range got {
		z.deliver(r.seq, r.payload)
	}
	return true
}

// replay runs one replay exchange (reference §1.4): send ["", start] on a DEALER, call
// each for every [“”, seq, payload] reply until the end marker. Bounded by ReplayTimeout.
func (z *ZMQ) replay(ctx context.Context, start uint64, each func(uint64, []byte) error) error {
	rctx, cancel := context.WithTimeout(ctx, z.cfg.ReplayTimeout)
	defer cancel()
	d := zmq4.NewDealer(rctx, zmq4.WithDialerMaxRetries(0), zmq4.WithDialerTimeout(z.cfg.DialTimeout), zmq4.WithLogger(silent))
	defer d.Close()
	if err := d.Dial(z.cfg.ReplayEndpoint); err != nil {
		return err
	}
	var req [8]byte
	binary.BigEndian.PutUint64(req[:], start)
	if err := d.SendMulti(zmq4.NewMsgFrom([]byte{}, req[:])); err != nil {
		return err
	}
	for {
		msg, err := d.Recv()
		if err != nil {
			return err
		}
		f := msg.Frames
		if len(f) > 0 && len(f[0]) == 0 {
			f = f[1:] // the empty delimiter frame
		}
		if len(f) != 2 || len(f[0]) != 8 {
			return fmt.Errorf("replay reply of %d frames, want [\"\", seq, payload]", len(msg.Frames))
		}
		seq := binary.BigEndian.Uint64(f[0])
		if seq == endMarker {
			return nil
		}
		if err := each(seq, f[1]); err != nil {
			return err
		}
	}
}
