package policy_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/domain/policy"
	"github.com/smg-go/smg/domain/worker"
)

func TestConsistentHashingMapsAKeyToTheSameWorker(t *testing.T) {
	t.Parallel()
	rec := newRecorder()
	o := policy.DefaultOptions()
	o.Observer = rec
	p := mustNew(t, "consistent_hashing", policy.LegDecode, o)
	other := mustNew(t, "consistent_hashing", policy.LegPrefill, o) // another instance (replica)
	ws := workers(5)
	for k := range 50 {
		req := &policy.Request{RoutingKey: fmt.Sprintf("user-%d", k)}
		want := ws[p.Select(ws, req)]
		for range 10 {
			shuffled := append([]*worker.Live(nil), ws...)
			rand.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
			require.Same(t, want, shuffled[p.Select(shuffled, req)], "key %d moved when candidates were reordered", k)
			require.Same(t, want, shuffled[other.Select(shuffled, req)], "another instance disagrees on key %d", k)
		}
	}
	assert.Equal(t, 50*(1+10+10), rec.count("consistent_hashing", "routing_key_hit"), "both instances report")
}

func TestConsistentHashingMovesAboutOneNthOfKeysWhenAWorkerIsAdded(t *testing.T) {
	t.Parallel()
	p := mustNew(t, "consistent_hashing", policy.LegDecode, policy.DefaultOptions())
	ws := workers(5)
	before, after := ws[:4], ws
	const keys = 10_000
	moved := 0
	perWorker := map[string]int{}
	for k := range keys {
		req := &policy.Request{RoutingKey: fmt.Sprintf("session-%d", k)}
		a := before[p.Select(before, req)]
		b := after[p.Select(after, req)]
		perWorker[a.URL]++
		if a != b {
			moved++
			require.Same(t, ws[4], b, "a key may only move to the new worker")
		}
	}
	t.Logf("moved %d of %d keys; per worker before: %v", moved, keys, perWorker)
	// 1/5 of the keys is expected; 150 virtual nodes keep it well inside ±30%.
	assert.InDelta(t, keys/5, moved, keys/5*0.3, "moved %d of %d", moved, keys)
	for url, n := range perWorker {
		assert.InDelta(t, keys/4, n, keys/4*0.3, "%s holds %d of %d keys on 4 workers", url, n, keys)
	}
}

func TestConsistentHashingOnlyRemapsTheKeysOfAMissingWorker(t *testing.T) {
	t.Parallel()
	p := mustNew(t, "consistent_hashing", policy.LegDecode, policy.DefaultOptions())
	ws := workers(4)
	without := []*worker.Live{ws[0], ws[1], ws[3]} // ws[2] unavailable
	for k := range 2000 {
		req := &policy.Request{RoutingKey: fmt.Sprintf("k%d", k)}
		a := ws[p.Select(ws, req)]
		b := without[p.Select(without, req)]
		if a != ws[2] {
			require.Same(t, a, b, "key %d moved although its worker is still there", k)
		}
	}
}

func TestConsistentHashingWithoutAKeyIsRandom(t *testing.T) {
	t.Parallel()
	rec := newRecorder()
	o := policy.DefaultOptions()
	o.Observer = rec
	p := mustNew(t, "consistent_hashing", policy.LegDecode, o)
	ws := workers(4)
	var picks []int
	for range 4000 {
		picks = append(picks, p.Select(ws, &policy.Request{}))
	}
	for i, n := range counts(4, picks) {
		assert.InDelta(t, 1000, n, 200, "worker %d", i)
	}
	assert.Equal(t, 4000, rec.count("consistent_hashing", "random_fallback"))
	assert.Equal(t, -1, p.Select(nil, &policy.Request{RoutingKey: "k"}))
	assert.Equal(t, 1, rec.count("consistent_hashing", "no_healthy_workers"))
}

func TestPrefixHash(t *testing.T) {
	t.Parallel()
	long := text(11, 2000) // the key is the first 4 × 256 = 1024 bytes
	cases := []struct {
		name   string
		loads  func(owner int) [4]int
		req    *policy.Request
		branch string
		check  func(t *testing.T, owner, got int, ws []*worker.Live)
	}{
		{
			name:   "idle fleet: the ring owner",
			loads:  func(int) [4]int { return [4]int{} },
			req:    &policy.Request{Text: long[:1024] + "different tail"},
			branch: "ring_hit",
			check:  func(t *testing.T, owner, got int, _ []*worker.Live) { assert.Equal(t, owner, got) },
		},
		{
			name: "owner within the load bound keeps the key",
			loads: func(owner int) [4]int {
				var l [4]int
				l[owner] = 10 // avg (10+1)/4 = 2.75; bound max(3.44, 12.75)
				return l
			},
			req:    &policy.Request{Text: long},
			branch: "ring_hit",
			check:  func(t *testing.T, owner, got int, _ []*worker.Live) { assert.Equal(t, owner, got) },
		},
		{
			name: "overloaded owner: walk to the next worker within the bound",
			loads: func(owner int) [4]int {
				l := [4]int{5, 5, 5, 5}
				l[owner] = 30 // avg (45+1)/4 = 11.5; bound max(14.4, 21.5)
				return l
			},
			req:    &policy.Request{Text: long},
			branch: "load_balance_walk",
			check: func(t *testing.T, owner, got int, ws []*worker.Live) {
				assert.NotEqual(t, owner, got)
				assert.EqualValues(t, 5, ws[got].Load())
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rec := newRecorder()
			o := policy.DefaultOptions()
			o.Observer = rec
			p := mustNew(t, "prefix_hash", policy.LegPrefill, o)
			ws := workers(4)
			owner := p.Select(ws, &policy.Request{Text: long})
			for i, l := range tc.loads(owner) {
				setLoad(ws[i], l)
			}
			before := rec.count("prefix_hash", tc.branch)
			tc.check(t, owner, p.Select(ws, tc.req), ws)
			assert.Equal(t, before+1, rec.count("prefix_hash", tc.branch), "branch %s", tc.branch)
		})
	}
}

func TestPrefixHashRoutingKeyWinsOverText(t *testing.T) {
	t.Parallel()
	p := mustNew(t, "prefix_hash", policy.LegPrefill, policy.DefaultOptions())
	ws := workers(8)
	for k := range 100 {
		key := fmt.Sprintf("conv-%d", k)
		want := p.Select(ws, &policy.Request{RoutingKey: key, Text: text(uint64(k), 100)})
		got := p.Select(ws, &policy.Request{RoutingKey: key, Text: text(uint64(k+500), 100)})
		require.Equal(t, want, got, "key %s", key)
	}
}

func TestPrefixHashWithoutKeyOrTextIsLeastLoaded(t *testing.T) {
	t.Parallel()
	rec := newRecorder()
	o := policy.DefaultOptions()
	o.Observer = rec
	p := mustNew(t, "prefix_hash", policy.LegDecode, o)
	ws := workers(3)
	setLoad(ws[0], 2)
	setLoad(ws[2], 1)
	assert.Equal(t, 1, p.Select(ws, &policy.Request{}))
	assert.Equal(t, 1, rec.count("prefix_hash", "no_routing_key"))
}
