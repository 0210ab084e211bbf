package kvevents_test

import (
	"context"
	"slices"
	"testing"

	"github.com/smg-go/smg/test/sim/kvcache"
	"github.com/smg-go/smg/test/sim/kvevents"
)

func seqIDs(from, n uint32) []uint32 {
	ids := make([]uint32, n)
	for i := range ids {
		ids[i] = from + uint32(i)
	}
	return ids
}

// The simulator's cache publishing through a Publisher: a subscriber sees a prompt's full
// blocks stored, an extension stored with its parent's hash, evictions at capacity and a
// clear, in order.
func TestCacheEventsReachTheSubscriber(t *testing.T) {
	t.Parallel()
	p := start(t, config(false), kvevents.EncodingVLLM)
	s := dialSub(t, p.Endpoint(), topic)
	waitSubscribed(t, p, topic)
	c, err := kvcache.New(kvcache.Config{BlockSize: 4, Blocks: 4, Sink: p})
	if err != nil {
		t.Fatal(err)
	}
	run := func(ids []uint32) {
		l, err := c.Acquire(context.Background(), ids, 0)
		if err != nil {
			t.Fatal(err)
		}
		l.Commit()
		l.Release()
	}
	run(seqIDs(1, 9))                                       // 2 full blocks + a partial tail
	run(append(seqIDs(1, 8), append(seqIDs(30, 4), 99)...)) // hits 2, stores 1 more
	run(seqIDs(100, 13))                                    // evicts the 3 cached blocks
	c.Clear()

	type ev struct {
		typ    string
		hashes []uint64
		parent any
		tokens []uint64
	}
	var got []ev
	for want := range uint64(5) {
		f := s.next(t)
		if f.seq != want {
			t.Fatalf("seq %d, want %d", f.seq, want)
		}
		for _, e := range decode(t, f.payload).events {
			typ, m := tagged(t, e)
			x := ev{typ: typ, parent: m["parent_block_hash"]}
			if h, ok := m["block_hashes"]; ok {
				x.hashes = uints(t, h)
			}
			if tk, ok := m["token_ids"]; ok {
				x.tokens = uints(t, tk)
			}
			got = append(got, x)
		}
	}
	if len(got) != 5 {
		t.Fatalf("%d events, want 5: %+v", len(got), got)
	}
	first, ext, rm, third := got[0], got[1], got[2], got[3]
	if first.typ != "BlockStored" || len(first.hashes) != 2 || first.parent != nil ||
		!slices.Equal(first.tokens, []uint64{1, 2, 3, 4, 5, 6, 7, 8}) {
		t.Fatalf("first store %+v", first)
	}
	if ext.typ != "BlockStored" || len(ext.hashes) != 1 || asUint(t, ext.parent) != first.hashes[1] ||
		!slices.Equal(ext.tokens, []uint64{30, 31, 32, 33}) {
		t.Fatalf("extension %+v: want one block whose parent is %d", ext, first.hashes[1])
	}
	evicted := append(slices.Clone(first.hashes), ext.hashes...)
	slices.Sort(evicted)
	slices.Sort(rm.hashes)
	if rm.typ != "BlockRemoved" || !slices.Equal(rm.hashes, evicted) {
		t.Fatalf("removal %+v, want the hashes %v", rm, evicted)
	}
	if third.typ != "BlockStored" || len(third.hashes) != 3 || got[4].typ != "AllBlocksCleared" {
		t.Fatalf("then %+v and %+v", third, got[4])
	}
}
