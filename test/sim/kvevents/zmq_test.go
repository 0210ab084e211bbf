package kvevents_test

import (
	"errors"
	"net"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/smg-go/smg/test/sim/kvcache"
	"github.com/smg-go/smg/test/sim/kvevents"
)

const topic = "kv-events"

// bigHash is above 2^63: vLLM sends it as a msgpack uint64.
const bigHash = 0xF0E1D2C3B4A59687

func config(replay bool) kvevents.Config {
	c := kvevents.DefaultConfig()
	c.EnableKVCacheEvents, c.Publisher, c.Endpoint, c.Topic = true, "zmq", "tcp://*:0", topic
	if replay {
		c.ReplayEndpoint = "tcp://*:0"
	}
	return c
}

func start(t *testing.T, c kvevents.Config, enc kvevents.Encoding) *kvevents.Publisher {
	t.Helper()
	p, err := kvevents.NewPublisher(kvevents.Options{Config: c, Encoding: enc, BindHost: "127.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p
}

func stored() kvcache.Event {
	return kvcache.Event{Stored: &kvcache.BlockStored{
		BlockHashes: []uint64{11, bigHash}, TokenIDs: []uint32{1, 2, 3, 4, 5, 6, 7, 8}, BlockSize: 4,
	}}
}

func storedChild() kvcache.Event {
	return kvcache.Event{Stored: &kvcache.BlockStored{
		BlockHashes: []uint64{33}, ParentBlockHash: bigHash, HasParent: true,
		TokenIDs: []uint32{9, 10, 11, 12}, BlockSize: 4, LoraID: 7,
	}}
}

func removed() kvcache.Event {
	return kvcache.Event{Removed: &kvcache.BlockRemoved{BlockHashes: []uint64{33, bigHash}}}
}

func TestZMQStoredRemovedClearedInOrder(t *testing.T) {
	t.Parallel()
	p := start(t, config(false), kvevents.EncodingVLLM)
	if !strings.HasPrefix(p.Endpoint(), "tcp://127.0.0.1:") {
		t.Fatalf("endpoint %q: want the bound loopback address", p.Endpoint())
	}
	s := dialSub(t, p.Endpoint(), topic)
	waitSubscribed(t, p, topic)

	p.Publish([]kvcache.Event{stored(), storedChild()})
	p.Publish([]kvcache.Event{removed()})
	p.Publish([]kvcache.Event{{Cleared: true}})

	for want := range uint64(3) {
		f := s.next(t)
		if f.topic != topic || f.seq != want {
			t.Fatalf("message topic %q seq %d, want %q seq %d", f.topic, f.seq, topic, want)
		}
		b := decode(t, f.payload)
		if b.rank != 0 || b.ts <= 0 {
			t.Fatalf("batch rank %d ts %v", b.rank, b.ts)
		}
		switch want {
		case 0:
			if len(b.events) != 2 {
				t.Fatalf("%d events, want 2", len(b.events))
			}
			typ, m := tagged(t, b.events[0])
			if typ != "BlockStored" || !slices.Equal(uints(t, m["block_hashes"]), []uint64{11, bigHash}) ||
				m["parent_block_hash"] != nil || !slices.Equal(uints(t, m["token_ids"]), []uint64{1, 2, 3, 4, 5, 6, 7, 8}) ||
				asInt(t, m["block_size"]) != 4 || m["lora_id"] != nil || m["medium"] != "GPU" {
				t.Fatalf("first event %#v", b.events[0])
			}
			typ, m = tagged(t, b.events[1])
			if typ != "BlockStored" || asUint(t, m["parent_block_hash"]) != bigHash || asInt(t, m["lora_id"]) != 7 ||
				!slices.Equal(uints(t, m["block_hashes"]), []uint64{33}) {
				t.Fatalf("second event %#v", b.events[1])
			}
		case 1:
			typ, m := tagged(t, b.events[0])
			if typ != "BlockRemoved" || !slices.Equal(uints(t, m["block_hashes"]), []uint64{33, bigHash}) {
				t.Fatalf("removed event %#v", b.events[0])
			}
		case 2:
			if typ, m := tagged(t, b.events[0]); typ != "AllBlocksCleared" || len(m) != 1 {
				t.Fatalf("cleared event %#v", b.events[0])
			}
		}
	}
}

func TestZMQGapRecoveredThroughReplay(t *testing.T) {
	t.Parallel()
	p := start(t, config(true), kvevents.EncodingVLLM)
	s := dialSub(t, p.Endpoint(), topic)
	waitSubscribed(t, p, topic)

	p.Publish([]kvcache.Event{stored()})
	if f := s.next(t); f.seq != 0 {
		t.Fatalf("first seq %d", f.seq)
	}
	if err := p.SetFault(kvevents.FaultGap); err != nil {
		t.Fatal(err)
	}
	p.Publish([]kvcache.Event{storedChild()})
	p.Publish([]kvcache.Event{removed()})
	last := uint64(0)
	f := s.next(t)
	if f.seq != last+2 {
		t.Fatalf("after the gap fault got seq %d, want %d (one skipped)", f.seq, last+2)
	}
	got := replay(t, p.ReplayEndpoint(), last+1)
	if len(got) != 2 || got[0].seq != 1 || got[1].seq != 2 {
		t.Fatalf("replay from 1: %d batches %+v, want seq 1 and 2", len(got), got)
	}
	typ, m := tagged(t, decode(t, got[0].payload).events[0])
	if typ != "BlockStored" || !slices.Equal(uints(t, m["block_hashes"]), []uint64{33}) {
		t.Fatalf("replayed seq 1 %#v, want the withheld BlockStored", m)
	}
	if string(got[1].payload) != string(f.payload) {
		t.Fatal("replayed seq 2 differs from the live one")
	}
	if all := replay(t, p.ReplayEndpoint(), 0); len(all) != 3 {
		t.Fatalf("replay from 0: %d batches, want 3", len(all))
	}
}

func TestZMQGarbageThenStall(t *testing.T) {
	t.Parallel()
	p := start(t, config(true), kvevents.EncodingVLLM)
	s := dialSub(t, p.Endpoint(), topic)
	waitSubscribed(t, p, topic)

	if err := p.SetFault(kvevents.FaultGarbage); err != nil {
		t.Fatal(err)
	}
	p.Publish([]kvcache.Event{stored()})
	f := s.next(t)
	var v any
	if f.seq != 0 || msgpack.Unmarshal(f.payload, &v) == nil {
		t.Fatalf("garbage fault: seq %d payload %x decodes", f.seq, f.payload)
	}
	if got := replay(t, p.ReplayEndpoint(), 0); len(got) != 1 || len(decode(t, got[0].payload).events) != 1 {
		t.Fatal("replay does not return the real batch behind the garbage")
	}

	if err := p.SetFault(kvevents.FaultStall); err != nil {
		t.Fatal(err)
	}
	p.Publish([]kvcache.Event{storedChild()})
	p.Publish([]kvcache.Event{removed()})
	// The stalled batches are numbered and buffered: wait for them in the buffer before
	// clearing the stall, so the next live batch is seq 3.
	waitPublished(t, p, 3)
	p.ClearFaults()
	p.Publish([]kvcache.Event{{Cleared: true}})
	if f := s.next(t); f.seq != 3 {
		t.Fatalf("first live batch after the stall: seq %d, want 3", f.seq)
	}
	if got := replay(t, p.ReplayEndpoint(), 1); len(got) != 3 {
		t.Fatalf("replay from 1 after the stall: %d batches, want 3", len(got))
	}
}

func TestZMQConnectsToABoundSubscriber(t *testing.T) {
	t.Parallel()
	s := newSub(t, topic)
	if err := s.sock.Listen("tcp://127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	go s.loop(t)
	port := s.sock.Addr().(*net.TCPAddr).Port
	c := config(false)
	c.Endpoint = "tcp://127.0.0.1:" + strconv.Itoa(port) // no wildcard: the engine connects
	p := start(t, c, kvevents.EncodingVLLM)
	waitSubscribed(t, p, topic)
	p.Publish([]kvcache.Event{{Cleared: true}})
	if f := s.next(t); f.seq != 0 || len(decode(t, f.payload).events) != 1 {
		t.Fatalf("connected publisher: seq %d", f.seq)
	}
}

func TestEncodings(t *testing.T) {
	t.Parallel()
	vllmArray := []string{"block_hashes", "parent_block_hash", "token_ids", "block_size", "lora_id", "medium"}
	cases := []struct {
		enc kvevents.Encoding
		// names of the positional fields (array shapes), nil for maps
		names []string
		// hash is how bigHash reads: unsigned (vLLM) or signed (SGLang)
		signed bool
		// storedLen is the number of map entries or array elements of a BlockStored
		storedLen, removedLen int
	}{
		{enc: kvevents.EncodingVLLM, storedLen: 11, removedLen: 4},
		{enc: kvevents.EncodingVLLMArray, names: vllmArray, storedLen: 7, removedLen: 3},
		{enc: kvevents.EncodingSGLang, signed: true, storedLen: 8, removedLen: 3},
		{enc: kvevents.EncodingSGLangArray, names: vllmArray[:5], signed: true, storedLen: 6, removedLen: 2},
	}
	for _, tc := range cases {
		t.Run(string(tc.enc), func(t *testing.T) {
			t.Parallel()
			p := start(t, config(false), tc.enc)
			s := dialSub(t, p.Endpoint(), topic)
			waitSubscribed(t, p, topic)
			p.Publish([]kvcache.Event{storedChild(), removed(), {Cleared: true}})
			b := decode(t, s.next(t).payload)
			if len(b.events) != 3 {
				t.Fatalf("%d events", len(b.events))
			}
			typ, m := tagged(t, b.events[0], tc.names...)
			if typ != "BlockStored" || eventLen(b.events[0]) != tc.storedLen {
				t.Fatalf("stored %#v: want %d fields", b.events[0], tc.storedLen)
			}
			parent := m["parent_block_hash"]
			// msgpack int64 for SGLang's signed hashes, uint64 for vLLM's above 2^63.
			if _, isU := parent.(uint64); isU == tc.signed {
				t.Fatalf("parent %#v (%T): signed=%v", parent, parent, tc.signed)
			}
			if tc.signed {
				if asInt(t, parent) != int64(-1)*int64(^uint64(bigHash)+1) {
					t.Fatalf("SGLang parent %#v: want %d as signed int64", parent, int64(-1)*int64(^uint64(bigHash)+1))
				}
			} else if asUint(t, parent) != bigHash {
				t.Fatalf("vLLM parent %#v: want %d", parent, uint64(bigHash))
			}
			if !slices.Equal(uints(t, m["token_ids"]), []uint64{9, 10, 11, 12}) || asInt(t, m["block_size"]) != 4 {
				t.Fatalf("stored fields %#v", m)
			}
			// SGLang names a LoRA (lora_name) and leaves lora_id None; vLLM and legacy SGLang
			// carry lora_id.
			if tc.enc == kvevents.EncodingSGLang {
				if m["lora_id"] != nil || m["lora_name"] != "lora-7" {
					t.Fatalf("SGLang LoRA fields %#v", m)
				}
			} else if asInt(t, m["lora_id"]) != 7 {
				t.Fatalf("lora_id %#v", m["lora_id"])
			}
			typ, _ = tagged(t, b.events[1], tc.names...)
			if typ != "BlockRemoved" || eventLen(b.events[1]) != tc.removedLen {
				t.Fatalf("removed %#v: want %d fields", b.events[1], tc.removedLen)
			}
			if typ, _ := tagged(t, b.events[2]); typ != "AllBlocksCleared" || eventLen(b.events[2]) != 1 {
				t.Fatalf("cleared %#v", b.events[2])
			}
		})
	}
}

func waitPublished(t *testing.T, p *kvevents.Publisher, n uint64) {
	t.Helper()
	deadline := time.Now().Add(waitBound)
	for p.Counts().Published < n {
		if time.Now().After(deadline) {
			t.Fatalf("%d batches published, want %d", p.Counts().Published, n)
		}
		time.Sleep(time.Millisecond)
	}
}

func eventLen(ev any) int {
	switch e := ev.(type) {
	case map[string]any:
		return len(e)
	case []any:
		return len(e)
	}
	return -1
}

func TestSetStampsRanks(t *testing.T) {
	t.Parallel()
	set, err := kvevents.NewSet(kvevents.Options{Config: config(true), BindHost: "127.0.0.1"}, 2)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = set.Close() })
	if set.Len() != 2 || set.Rank(2) != nil {
		t.Fatalf("set of %d ranks", set.Len())
	}
	r1 := set.Rank(1)
	s := dialSub(t, r1.Endpoint(), topic)
	waitSubscribed(t, r1, topic)
	r1.Publish([]kvcache.Event{{Cleared: true}})
	if f := s.next(t); f.seq != 0 || decode(t, f.payload).rank != 1 {
		t.Fatalf("rank 1 batch: seq %d rank %d", f.seq, decode(t, f.payload).rank)
	}
	if got := replay(t, r1.ReplayEndpoint(), 0); len(got) != 1 || decode(t, got[0].payload).rank != 1 {
		t.Fatal("rank 1 replay")
	}
	if disabled, err := kvevents.NewSet(kvevents.Options{Config: kvevents.DefaultConfig()}, 2); disabled != nil || err != nil {
		t.Fatalf("disabled config: set %v err %v, want neither", disabled, err)
	}
}

func TestSubscribeCursor(t *testing.T) {
	t.Parallel()
	c := config(false)
	c.BufferSteps = 2
	p := start(t, c, kvevents.EncodingVLLM)
	live, err := p.Subscribe(0)
	if err != nil {
		t.Fatal(err)
	}
	for range 4 {
		p.Publish([]kvcache.Event{stored(), removed()})
	}
	for want := range uint64(4) {
		b := <-live.C
		if b.Seq != want || b.FirstEventID != 1+2*want || len(b.Events) != 2 || b.DPRank != 0 {
			t.Fatalf("live batch %+v, want seq %d first event id %d", b, want, 1+2*want)
		}
	}
	// The buffer keeps seq 2 and 3; the next batch will be seq 4.
	r, err := p.Subscribe(2)
	if err != nil || len(r.Backlog) != 2 || r.Backlog[0].Seq != 2 || r.Backlog[1].Seq != 3 {
		t.Fatalf("cursor 2: backlog %+v err %v, want seq 2 and 3", r, err)
	}
	if r, err := p.Subscribe(4); err != nil || len(r.Backlog) != 0 {
		t.Fatalf("cursor at the next batch: %v", err)
	}
	for _, cur := range []uint64{1, 5} {
		if _, err := p.Subscribe(cur); !errors.Is(err, kvevents.ErrCursorExpired) {
			t.Fatalf("cursor %d: err %v, want ErrCursorExpired", cur, err)
		}
	}
	_ = p.Close()
	if _, ok := <-live.C; ok || !errors.Is(live.Err(), kvevents.ErrClosed) {
		t.Fatalf("after Close: err %v", live.Err())
	}
}
