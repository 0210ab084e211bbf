package kvevents

import (
	"context"
	"encoding/binary"
	"fmt"

	"github.com/go-zeromq/zmq4"
)

type replayed struct {
	seq     uint64
	payload []byte
}

// fetch asks the replay endpoint for the batches from start and returns them in order.
// With exact they must begin at start; without, at the oldest the engine still buffers.
// Either way they must be contiguous and reach upTo-1.
func (z *ZMQ) fetch(ctx context.Context, start, upTo uint64, exact bool) ([]replayed, error) {
	var got []replayed
	err := z.replay(ctx, start, func(seq uint64, payload []byte) error {
		want := start
		switch {
		case len(got) > 0:
			want = got[len(got)-1].seq + 1
		case !exact && seq >= start:
			want = seq
		}
		if seq != want {
			if seq < want {
				return nil // below the cursor: not needed
			}
			return fmt.Errorf("replay jumped from %d to %d", want-1, seq)
		}
		got = append(got, replayed{seq, payload})
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(got) == 0 || got[len(got)-1].seq+1 < upTo {
		end := start
		if len(got) > 0 {
			end = got[len(got)-1].seq + 1
		}
		return nil, fmt.Errorf("replay ended at %d, before %d", end, upTo)
	}
	return got, nil
}

// recover replays the batches after the tracker's last one. It applies them only when
// they cover every batch before upTo without a hole, counting the replay first so Health
// never shows the replayed sequence numbers without it; it reports whether it did.
func (z *ZMQ) recover(ctx context.Context, upTo uint64) bool {
	if z.cfg.ReplayEndpoint == "" {
		return false
	}
	start := z.seq.last + 1
	got, err := z.fetch(ctx, start, upTo, true)
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

// bootstrap applies the engine's buffered history before upTo, the first batch seen. A
// failure is only logged: the stream goes on from upTo, as without a replay endpoint.
func (z *ZMQ) bootstrap(ctx context.Context, upTo uint64) bool {
	got, err := z.fetch(ctx, 0, upTo, false)
	if err != nil {
		z.st.log.Info("kv events: no history replayed on first contact", "replay_endpoint", z.cfg.ReplayEndpoint, "err", err)
		return false
	}
	z.st.update(func(h *Health) { h.Bootstraps++ })
	for _, r := range got {
		z.deliver(r.seq, r.payload)
	}
	z.seq.replayed(got[0].seq)
	return true
}

// endMarker is the replay's end-of-stream sequence: -1 as a signed 8-byte value.
const endMarker = ^uint64(0)

// replay runs one replay exchange (reference §1.4): send ["", start] on a DEALER, call
// each for every ["", seq, payload] reply until the end marker. Bounded by ReplayTimeout.
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
