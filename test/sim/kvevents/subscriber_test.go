package kvevents_test

// A subscriber written from the wire facts (kv-routing.md §1.3–1.5, §2.2), not from the
// publisher's code: frames are read with go-zeromq/zmq4 and payloads decoded with msgpack
// into generic values.

import (
	"context"
	"encoding/binary"
	"slices"
	"testing"
	"time"

	"github.com/go-zeromq/zmq4"
	"github.com/vmihailenco/msgpack/v5"

	"github.com/smg-go/smg/test/sim/kvevents"
)

const waitBound = 10 * time.Second

type frame struct {
	topic   string
	seq     uint64
	payload []byte
}

type sub struct {
	sock zmq4.Socket
	in   chan frame
}

func newSub(t *testing.T, topic string) *sub {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	s := &sub{sock: zmq4.NewSub(ctx), in: make(chan frame, 64)}
	t.Cleanup(func() { cancel(); _ = s.sock.Close() })
	if err := s.sock.SetOption(zmq4.OptionSubscribe, topic); err != nil {
		t.Fatal(err)
	}
	return s
}

// dialSub connects a SUB socket to ep (a bound publisher).
func dialSub(t *testing.T, ep, topic string) *sub {
	t.Helper()
	s := newSub(t, topic)
	if err := s.sock.Dial(ep); err != nil {
		t.Fatal(err)
	}
	go s.loop(t)
	return s
}

func (s *sub) loop(t *testing.T) {
	for {
		m, err := s.sock.Recv()
		if err != nil {
			close(s.in)
			return
		}
		if len(m.Frames) != 3 || len(m.Frames[1]) != 8 {
			t.Errorf("PUB message of %d frames (seq frame %d bytes), want 3 frames and 8 bytes", len(m.Frames), len(m.Frames[1]))
			continue
		}
		s.in <- frame{topic: string(m.Frames[0]), seq: binary.BigEndian.Uint64(m.Frames[1]), payload: m.Frames[2]}
	}
}

func (s *sub) next(t *testing.T) frame {
	t.Helper()
	select {
	case f, ok := <-s.in:
		if !ok {
			t.Fatal("SUB socket closed")
		}
		return f
	case <-time.After(waitBound):
		t.Fatal("no PUB message within the bound")
	}
	return frame{}
}

// waitSubscribed waits until the publisher's PUB socket has a subscriber to topic: a PUB
// drops what nobody has subscribed to yet.
func waitSubscribed(t *testing.T, p *kvevents.Publisher, topic string) {
	t.Helper()
	deadline := time.Now().Add(waitBound)
	for !slices.Contains(p.SubscribedTopics(), topic) {
		if time.Now().After(deadline) {
			t.Fatal("no subscriber reached the PUB socket")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// replay asks a ROUTER for every batch from start with a DEALER (sending ["", seq] itself,
// §1.4) and returns the replies until the end marker (sequence -1, empty payload).
func replay(t *testing.T, ep string, start uint64) []frame {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitBound)
	defer cancel()
	d := zmq4.NewDealer(ctx)
	defer d.Close()
	if err := d.Dial(ep); err != nil {
		t.Fatal(err)
	}
	var seq [8]byte
	binary.BigEndian.PutUint64(seq[:], start)
	if err := d.Send(zmq4.NewMsgFrom([]byte{}, seq[:])); err != nil {
		t.Fatal(err)
	}
	var out []frame
	for {
		m, err := d.Recv()
		if err != nil {
			t.Fatalf("replay: %v (after %d replies)", err, len(out))
		}
		if len(m.Frames) != 3 || len(m.Frames[0]) != 0 || len(m.Frames[1]) != 8 {
			t.Fatalf("replay reply of %d frames, want [\"\", seq, payload]", len(m.Frames))
		}
		if int64(binary.BigEndian.Uint64(m.Frames[1])) == -1 {
			if len(m.Frames[2]) != 0 {
				t.Fatal("end marker with a payload")
			}
			return out
		}
		out = append(out, frame{seq: binary.BigEndian.Uint64(m.Frames[1]), payload: m.Frames[2]})
	}
}

// batch is a decoded KVEventBatch: the outer array [ts, events, dp_rank].
type batch struct {
	ts     float64
	events []any
	rank   int64
}

func decode(t *testing.T, payload []byte) batch {
	t.Helper()
	var v any
	if err := msgpack.Unmarshal(payload, &v); err != nil {
		t.Fatalf("payload does not decode: %v", err)
	}
	arr, ok := v.([]any)
	if !ok || len(arr) < 2 || len(arr) > 3 {
		t.Fatalf("batch %#v: want an array [ts, events, dp_rank]", v)
	}
	var b batch
	if b.ts, ok = arr[0].(float64); !ok {
		t.Fatalf("ts %#v is not a float64", arr[0])
	}
	if b.events, ok = arr[1].([]any); !ok {
		t.Fatalf("events %#v is not an array", arr[1])
	}
	if len(arr) == 3 {
		b.rank = asInt(t, arr[2])
	}
	return b
}

// tagged returns an event's type and its fields by name: from a map's "type" key, or
// from a tagged array's first element and the positional names given.
func tagged(t *testing.T, ev any, names ...string) (string, map[string]any) {
	t.Helper()
	switch e := ev.(type) {
	case map[string]any:
		typ, _ := e["type"].(string)
		return typ, e
	case []any:
		typ, _ := e[0].(string)
		m := map[string]any{}
		for i, v := range e[1:] {
			if i < len(names) {
				m[names[i]] = v
			}
		}
		return typ, m
	}
	t.Fatalf("event %#v is neither a map nor an array", ev)
	return "", nil
}

// asUint is a msgpack integer as uint64 (vLLM hashes may exceed 2^63).
func asUint(t *testing.T, v any) uint64 {
	t.Helper()
	switch n := v.(type) {
	case uint8, uint16, uint32, uint64:
		return toU64(n)
	case int8, int16, int32, int64:
		return uint64(asInt(t, n))
	}
	t.Fatalf("%#v is not an integer", v)
	return 0
}

func toU64(v any) uint64 {
	switch n := v.(type) {
	case uint8:
		return uint64(n)
	case uint16:
		return uint64(n)
	case uint32:
		return uint64(n)
	}
	return v.(uint64)
}

func asInt(t *testing.T, v any) int64 {
	t.Helper()
	switch n := v.(type) {
	case int8:
		return int64(n)
	case int16:
		return int64(n)
	case int32:
		return int64(n)
	case int64:
		return n
	case uint8, uint16, uint32:
		return int64(toU64(n))
	case uint64:
		if n > 1<<63-1 {
			t.Fatalf("%d does not fit a signed int64", n)
		}
		return int64(n)
	}
	t.Fatalf("%#v is not an integer", v)
	return 0
}

func uints(t *testing.T, v any) []uint64 {
	t.Helper()
	arr, ok := v.([]any)
	if !ok {
		t.Fatalf("%#v is not an array", v)
	}
	out := make([]uint64, len(arr))
	for i, x := range arr {
		out[i] = asUint(t, x)
	}
	return out
}
