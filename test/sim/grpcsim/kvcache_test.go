package grpcsim_test

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	sglangpb "github.com/smg-go/smg/adapters/engine/grpcengine/pb/sglang"
	"github.com/smg-go/smg/test/sim/grpcsim"
	"github.com/smg-go/smg/test/sim/kvcache"
)

type sinkRec struct {
	mu  sync.Mutex
	evs []kvcache.Event
}

func (r *sinkRec) Publish(evs []kvcache.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.evs = append(r.evs, evs...)
}

func (r *sinkRec) events() []kvcache.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]kvcache.Event(nil), r.evs...)
}

func with(base []uint32, from, n int) []uint32 {
	out := append([]uint32(nil), base...)
	for i := 0; i < n; i++ {
		out = append(out, uint32(from+i))
	}
	return out
}

// A SGLang PD pair with pages of 16: the second prompt shares the first's 40-token
// system prompt, so the prefill reports 32 tokens cached; the decode that receives the KV
// reports all of it and holds the shared blocks locally too. /sim/stats counts it.
func TestSharedPrefixOverGRPCReportsCachedTokensAndStatsMove(t *testing.T) {
	t.Parallel()
	sink := &sinkRec{}
	p := start(t, grpcsim.Config{Engine: grpcsim.EngineSGLang, Role: grpcsim.RolePrefill, KVEventSink: sink})
	d := start(t, grpcsim.Config{Engine: grpcsim.EngineSGLang, Role: grpcsim.RoleDecode})
	pc, dc := sglangpb.NewSglangSchedulerClient(dial(t, p)), sglangpb.NewSglangSchedulerClient(dial(t, d))
	system := prompt(40)
	pd := func(room int32, ids []uint32) (prefill, decode *sglangpb.GenerateComplete) {
		dp := &sglangpb.DisaggregatedParams{BootstrapHost: "127.0.0.1", BootstrapPort: int32(p.BootstrapPort()), BootstrapRoom: room}
		ctx := ctxT(t, 10*time.Second)
		done := make(chan sgResult, 1)
		go func() { done <- sgGenerate(ctx, pc, sgReq(itoa(int(room)), ids, 2, false, dp)) }()
		dr := sgGenerate(ctx, dc, sgReq(itoa(int(room)), ids, 2, false, dp))
		pr := <-done
		require.NoError(t, pr.err)
		require.NoError(t, dr.err)
		return pr.complete, dr.complete
	}
	pr, dr := pd(1, with(system, 1000, 10))
	assert.Equal(t, uint32(0), pr.GetCachedTokens(), "cold")
	assert.Equal(t, uint32(50), dr.GetCachedTokens(), "the decode computed nothing: all 50 came through the handoff")
	pr, dr = pd(2, with(system, 2000, 7))
	assert.Equal(t, uint32(47), pr.GetPromptTokens())
	assert.Equal(t, uint32(32), pr.GetCachedTokens(), "the system prompt's two full pages")
	assert.Equal(t, uint32(47), dr.GetCachedTokens())

	st := httpStats(t, p)
	assert.Equal(t, int64(97), st.PromptTokens)
	assert.Equal(t, int64(32), st.CachedTokens)
	assert.Equal(t, int64(3), st.KVCacheBlocksUsed, "three full pages of the first prompt; partial pages are not kept")
	assert.Zero(t, st.EvictedBlocks)
	ds := httpStats(t, d)
	assert.Equal(t, int64(32), ds.CachedTokens, "the decode's own hits: the pages the first handoff left in its cache")

	evs := sink.events()
	require.Len(t, evs, 1, "the second prompt's new tokens fill no page")
	require.NotNil(t, evs[0].Stored)
	assert.Equal(t, kvcache.BlockHashes(nil, with(system, 1000, 10), 16, 0), evs[0].Stored.BlockHashes)
	assert.Equal(t, 16, evs[0].Stored.BlockSize)
}

// A cache that holds only what one running prompt needs makes the next RPC wait until the
// first completes (it is not admitted over held blocks), and the wait counts in queue_ms.
func TestFullCacheQueuesTheNextRPC(t *testing.T) {
	t.Parallel()
	d := start(t, grpcsim.Config{Engine: grpcsim.EngineSGLang, Role: grpcsim.RoleDecode, PageSize: 4, KVCacheBlocks: 2,
		ITL: 20 * time.Millisecond})
	dc := sglangpb.NewSglangSchedulerClient(dial(t, d))
	ctx := ctxT(t, 10*time.Second)
	first := make(chan sgResult, 1)
	go func() { first <- sgGenerate(ctx, dc, sgReq("a", prompt(8), 10, false, nil)) }()
	require.Eventually(t, func() bool { return d.Stats().KVCacheBlocksUsed == 2 }, waitFor, tick)
	second := sgGenerate(ctx, dc, sgReq("b", with(nil, 5000, 8), 1, false, nil))
	require.NoError(t, second.err)
	require.NoError(t, (<-first).err)
	st := d.Stats()
	assert.Positive(t, st.QueueMS, "the second RPC waited for the first's blocks")
	assert.Equal(t, int64(2), st.EvictedBlocks, "then took them")
}
