package policy_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/domain/policy"
	"github.com/smg-go/smg/domain/worker"
)

func manualPair(t *testing.T, store policy.StickyStore, mut func(*policy.Options)) (prefill, decode policy.Policy, rec *recorder) {
	t.Helper()
	rec = newRecorder()
	o := policy.DefaultOptions()
	o.Sticky, o.Observer = store, rec
	if mut != nil {
		mut(&o)
	}
	return mustNew(t, "manual", policy.LegPrefill, o), mustNew(t, "manual", policy.LegDecode, o), rec
}

func TestManualSticksPerLeg(t *testing.T) {
	t.Parallel()
	store := newFakeStore()
	prefill, decode, rec := manualPair(t, store, nil)
	pw, dw := workers(8), workers(8)
	req := &policy.Request{RoutingKey: "conv-1"}
	p0, d0 := prefill.Select(pw, req), decode.Select(dw, req)
	for range 50 {
		require.Equal(t, p0, prefill.Select(pw, req))
		require.Equal(t, d0, decode.Select(dw, req))
	}
	assert.Equal(t, map[string]string{"prefill:conv-1": pw[p0].URL, "decode:conv-1": dw[d0].URL}, store.snapshot())
	assert.Equal(t, 2, rec.count("manual", "vacant"))
	assert.Equal(t, 100, rec.count("manual", "occupied_hit"))
	assert.Equal(t, 14400*time.Second, store.ttls["prefill:conv-1"], "pins expire after --max-idle-secs")
}

func TestManualLegsAreIndependent(t *testing.T) {
	t.Parallel()
	store := newFakeStore()
	prefill, decode, _ := manualPair(t, store, nil)
	ws := workers(4)
	require.NoError(t, store.Set(context.Background(), "prefill:k", ws[2].URL, time.Hour))
	require.NoError(t, store.Set(context.Background(), "decode:k", ws[3].URL, time.Hour))
	assert.Equal(t, 2, prefill.Select(ws, &policy.Request{RoutingKey: "k"}))
	assert.Equal(t, 3, decode.Select(ws, &policy.Request{RoutingKey: "k"}))
}

func TestManualRepicksWhenTheStickyWorkerIsGone(t *testing.T) {
	t.Parallel()
	store := newFakeStore()
	prefill, _, rec := manualPair(t, store, nil)
	ws := workers(4)
	req := &policy.Request{RoutingKey: "conv-2"}
	first := ws[prefill.Select(ws, req)]
	var rest []*worker.Live
	for _, w := range ws {
		if w != first {
			rest = append(rest, w)
		}
	}
	second := rest[prefill.Select(rest, req)]
	assert.NotSame(t, first, second)
	assert.Equal(t, 1, rec.count("manual", "occupied_miss"))
	assert.Equal(t, second.URL, store.snapshot()["prefill:conv-2"], "re-pinned to the new worker")
	// the new pin holds when the old worker returns
	assert.Same(t, second, ws[prefill.Select(ws, req)])
}

func TestManualStoreFailureFallsBackToAFreshPick(t *testing.T) {
	t.Parallel()
	store := newFakeStore()
	prefill, _, rec := manualPair(t, store, nil)
	ws := workers(4)
	store.setFail(errStoreDown)
	for range 20 {
		i := prefill.Select(ws, &policy.Request{RoutingKey: "k"})
		require.True(t, i >= 0 && i < 4, "got %d", i)
	}
	assert.Equal(t, 20, rec.count("manual", "store_error"))
}

// blockingStore never answers until the context ends, like a hung Redis.
type blockingStore struct{ fakeStore }

func (s *blockingStore) Get(ctx context.Context, _ string) (string, bool, error) {
	<-ctx.Done()
	return "", false, ctx.Err()
}

func TestManualBoundsAHungStoreByStickyTimeout(t *testing.T) {
	t.Parallel()
	store := &blockingStore{*newFakeStore()}
	prefill, _, rec := manualPair(t, store, func(o *policy.Options) { o.StickyTimeout = 10 * time.Millisecond })
	ws := workers(2)
	done := make(chan int, 1)
	go func() { done <- prefill.Select(ws, &policy.Request{RoutingKey: "k"}) }()
	select {
	case i := <-done:
		assert.True(t, i == 0 || i == 1)
	case <-time.After(5 * time.Second):
		t.Fatal("Select hung on the sticky store")
	}
	assert.Equal(t, 1, rec.count("manual", "store_error"))
}

func TestManualWithoutKeyStoresNothing(t *testing.T) {
	t.Parallel()
	store := newFakeStore()
	prefill, _, rec := manualPair(t, store, nil)
	ws := workers(3)
	i := prefill.Select(ws, &policy.Request{})
	assert.True(t, i >= 0 && i < 3)
	assert.Equal(t, 1, rec.count("manual", "no_routing_id"))
	assert.Zero(t, store.gets)
	assert.Empty(t, store.snapshot())
}

func TestManualAssignmentModes(t *testing.T) {
	t.Parallel()
	cases := []struct {
		mode string
		keys []int // active keys per worker, for min_group
		want int
	}{
		{policy.AssignMinLoad, nil, 1},
		{policy.AssignDelegate, nil, 1},
		{policy.AssignMinGroup, []int{0, 5, 3}, 0},
		{policy.AssignMinGroup, nil, 1}, // no key source: min_load
	}
	for _, tc := range cases {
		t.Run(tc.mode, func(t *testing.T) {
			t.Parallel()
			ws := workers(3)
			setLoad(ws[0], 4)
			setLoad(ws[2], 2)
			prefill, _, _ := manualPair(t, newFakeStore(), func(o *policy.Options) {
				o.AssignmentMode = tc.mode
				if tc.keys != nil {
					o.ActiveKeys = func(w *worker.Live) int {
						for i, x := range ws {
							if x == w {
								return tc.keys[i]
							}
						}
						return 0
					}
				}
			})
			assert.Equal(t, tc.want, prefill.Select(ws, &policy.Request{RoutingKey: "new"}))
		})
	}
}
