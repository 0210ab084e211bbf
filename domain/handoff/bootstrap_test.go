package handoff_test

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/domain/handoff"
	"github.com/smg-go/smg/domain/worker"
)

func ptr(v int) *int { return &v }

// seq returns a deterministic room generator: first, first+1, ...
func seq(first uint64) func() uint64 {
	next := first
	return func() uint64 { r := next; next++; return r }
}

func mustInspect(t *testing.T, route handoff.Route, body string) *handoff.Request {
	t.Helper()
	r, err := handoff.Inspect(route, []byte(body))
	require.NoError(t, err)
	return r
}

func TestBootstrapPatchExactBodies(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name          string
		route         handoff.Route
		body          string
		target        handoff.Target
		prefill, dec  string
		rooms         []uint64
		sameBodySlice bool
	}{
		{
			name:    "scalar form appended at the end, key order kept",
			route:   handoff.RouteChat,
			body:    `{"model":"m","messages":[{"role":"user","content":"hi"}],"stream":true}`,
			target:  handoff.Target{Host: "10.0.0.1", Port: ptr(8998)},
			prefill: `{"model":"m","messages":[{"role":"user","content":"hi"}],"stream":true,"bootstrap_host":"10.0.0.1","bootstrap_port":8998,"bootstrap_room":42}`,
			rooms:   []uint64{42}, sameBodySlice: true,
		},
		{
			name:    "no registered port is sent as null",
			route:   handoff.RouteMessages,
			body:    `{"model":"m","max_tokens":16,"messages":[{"role":"user","content":"hi"}]}`,
			target:  handoff.Target{Host: "prefill-0"},
			prefill: `{"model":"m","max_tokens":16,"messages":[{"role":"user","content":"hi"}],"bootstrap_host":"prefill-0","bootstrap_port":null,"bootstrap_room":42}`,
			rooms:   []uint64{42}, sameBodySlice: true,
		},
		{
			name:    "client-sent bootstrap fields are overwritten in place",
			route:   handoff.RouteGenerate,
			body:    `{"bootstrap_room":1,"text":"hi","bootstrap_host":"evil","bootstrap_port":1}`,
			target:  handoff.Target{Host: "[::1]", Port: ptr(9000)},
			prefill: `{"bootstrap_room":42,"text":"hi","bootstrap_host":"[::1]","bootstrap_port":9000}`,
			rooms:   []uint64{42}, sameBodySlice: true,
		},
		{
			name:    "completions prompt array gets equal-length lists",
			route:   handoff.RouteCompletions,
			body:    `{"prompt":["a","b","c"],"max_tokens":4}`,
			target:  handoff.Target{Host: "h", Port: ptr(8998)},
			prefill: `{"prompt":["a","b","c"],"max_tokens":4,"bootstrap_host":["h","h","h"],"bootstrap_port":[8998,8998,8998],"bootstrap_room":[42,43,44]}`,
			rooms:   []uint64{42, 43, 44}, sameBodySlice: true,
		},
		{
			name:    "generate input_ids batch with null ports",
			route:   handoff.RouteGenerate,
			body:    `{"input_ids":[[1,2],[3]],"bootstrap_room":[7,7]}`,
			target:  handoff.Target{Host: "h"},
			prefill: `{"input_ids":[[1,2],[3]],"bootstrap_room":[42,43],"bootstrap_host":["h","h"],"bootstrap_port":[null,null]}`,
			rooms:   []uint64{42, 43}, sameBodySlice: true,
		},
		{
			name:    "generate one-element batch stays a list",
			route:   handoff.RouteGenerate,
			body:    `{"text":["only"]}`,
			target:  handoff.Target{Host: "h", Port: ptr(1)},
			prefill: `{"text":["only"],"bootstrap_host":["h"],"bootstrap_port":[1],"bootstrap_room":[42]}`,
			rooms:   []uint64{42}, sameBodySlice: true,
		},
		{
			name:    "dp-aware: both ranks",
			route:   handoff.RouteChat,
			body:    `{"model":"m"}`,
			target:  handoff.Target{Host: "h", Port: ptr(8998), PrefillDPRank: ptr(2), DecodeDPRank: ptr(5)},
			prefill: `{"model":"m","bootstrap_host":"h","bootstrap_port":8998,"bootstrap_room":42,"routed_dp_rank":2}`,
			dec:     `{"model":"m","bootstrap_host":"h","bootstrap_port":8998,"bootstrap_room":42,"routed_dp_rank":5,"disagg_prefill_dp_rank":2}`,
			rooms:   []uint64{42},
		},
		{
			name:    "dp-aware: prefill rank only",
			route:   handoff.RouteChat,
			body:    `{"model":"m","routed_dp_rank":9}`,
			target:  handoff.Target{Host: "h", Port: ptr(8998), PrefillDPRank: ptr(0)},
			prefill: `{"model":"m","routed_dp_rank":0,"bootstrap_host":"h","bootstrap_port":8998,"bootstrap_room":42}`,
			dec:     `{"model":"m","bootstrap_host":"h","bootstrap_port":8998,"bootstrap_room":42,"disagg_prefill_dp_rank":0}`,
			rooms:   []uint64{42},
		},
		{
			name:    "dp-aware: decode rank only",
			route:   handoff.RouteChat,
			body:    `{"disagg_prefill_dp_rank":3}`,
			target:  handoff.Target{Host: "h", Port: ptr(8998), DecodeDPRank: ptr(1)},
			prefill: `{"bootstrap_host":"h","bootstrap_port":8998,"bootstrap_room":42}`,
			dec:     `{"bootstrap_host":"h","bootstrap_port":8998,"bootstrap_room":42,"routed_dp_rank":1}`,
			rooms:   []uint64{42},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			req := mustInspect(t, tc.route, tc.body)
			legs := handoff.BootstrapPatch(req.Body, req.Batch, tc.target, seq(42))
			assert.Equal(t, tc.prefill, string(legs.Prefill))
			wantDecode := tc.dec
			if wantDecode == "" {
				wantDecode = tc.prefill
			}
			assert.Equal(t, wantDecode, string(legs.Decode))
			assert.Equal(t, tc.rooms, legs.Rooms)
			if tc.sameBodySlice {
				assert.Same(t, &legs.Prefill[0], &legs.Decode[0], "identical legs share one body")
			}
			assert.Equal(t, tc.body, string(req.Body.Bytes()), "client body untouched")
		})
	}
}

func TestTargetFor(t *testing.T) {
	t.Parallel()
	p := worker.Worker{URL: "http://10.1.2.3:8000@1", BootstrapPort: ptr(8998), DPRank: ptr(1), DPSize: ptr(2)}
	d := worker.Worker{URL: "http://d:8000@0", DPRank: ptr(0), DPSize: ptr(2)}
	assert.Equal(t, handoff.Target{Host: "10.1.2.3", Port: ptr(8998), PrefillDPRank: ptr(1), DecodeDPRank: ptr(0)},
		handoff.TargetFor(p, d, true))
	assert.Equal(t, handoff.Target{Host: "10.1.2.3", Port: ptr(8998)}, handoff.TargetFor(p, d, false))
	v6 := worker.Worker{URL: "http://[fd00::1]:8000"}
	assert.Equal(t, handoff.Target{Host: "[fd00::1]"}, handoff.TargetFor(v6, d, false))
}

func TestBootstrapPatchMintsFreshRoomsByDefault(t *testing.T) {
	t.Parallel()
	req := mustInspect(t, handoff.RouteCompletions, `{"prompt":["a","b","c","d"]}`)
	legs := handoff.BootstrapPatch(req.Body, req.Batch, handoff.Target{Host: "h"}, nil)
	require.Len(t, legs.Rooms, 4)
	seen := map[uint64]bool{}
	for _, r := range legs.Rooms {
		assert.LessOrEqual(t, r, uint64(1<<63-1))
		seen[r] = true
	}
	assert.Len(t, seen, 4, "independently drawn rooms")
}

func TestMintRoomRangeAndConcurrency(t *testing.T) {
	t.Parallel()
	const goroutines, per = 8, 2000
	var mu sync.Mutex
	seen := make(map[uint64]bool, goroutines*per)
	var wg sync.WaitGroup
	var highHalf int
	for range goroutines {
		wg.Go(func() {
			local := make([]uint64, per)
			for i := range local {
				local[i] = handoff.MintRoom()
			}
			mu.Lock()
			defer mu.Unlock()
			for _, r := range local {
				seen[r] = true
				if r >= 1<<62 {
					highHalf++
				}
			}
		})
	}
	wg.Wait()
	assert.Len(t, seen, goroutines*per, "no duplicate rooms")
	for r := range seen {
		require.Less(t, r, uint64(1)<<63, "room must fit in [0, 2^63-1]")
	}
	// Uniform over [0, 2^63): about half land in the upper half. 16000 draws: mean 8000,
	// sd ~63; the bound is > 15 sd wide.
	assert.InDelta(t, goroutines*per/2, highHalf, 1000)
}
