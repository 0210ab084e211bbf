package grpcsim_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	commonpb "github.com/smg-go/smg/adapters/engine/grpcengine/pb/common"
	sglangpb "github.com/smg-go/smg/adapters/engine/grpcengine/pb/sglang"
	tokenspeedpb "github.com/smg-go/smg/adapters/engine/grpcengine/pb/tokenspeed"
	vllmpb "github.com/smg-go/smg/adapters/engine/grpcengine/pb/vllm"
	"github.com/smg-go/smg/domain/wire"
	"github.com/smg-go/smg/test/sim/grpcsim"
	"github.com/smg-go/smg/test/sim/kvcache"
)

const bigHash = 0xF0E1D2C3B4A59687 // above 2^63: a negative int64 on the wire

type kvStream = grpc.ServerStreamingClient[commonpb.KvEventBatch]

// kvSubscribe opens SubscribeKvEvents on the engine's own service and waits for the
// response headers (the server has registered the subscription by then).
func kvSubscribe(t *testing.T, s *grpcsim.Server, start uint64) (kvStream, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	req := &commonpb.SubscribeKvEventsRequest{StartSequenceNumber: start}
	cc := dial(t, s)
	var st kvStream
	var err error
	switch s.Config().Engine {
	case grpcsim.EngineSGLang:
		st, err = sglangpb.NewSglangSchedulerClient(cc).SubscribeKvEvents(ctx, req)
	case grpcsim.EngineVLLM:
		st, err = vllmpb.NewVllmEngineClient(cc).SubscribeKvEvents(ctx, req)
	default:
		st, err = tokenspeedpb.NewTokenSpeedSchedulerClient(cc).SubscribeKvEvents(ctx, req)
	}
	if err != nil {
		return nil, err
	}
	if _, err := st.Header(); err != nil {
		return nil, err
	}
	return st, nil
}

func kvConfig(engine string, extra string) string {
	if engine == grpcsim.EngineVLLM {
		return `{"enable_kv_cache_events":true,"endpoint":"tcp://*:0","replay_endpoint":"tcp://*:0"` + extra + `}`
	}
	return `{"publisher":"zmq","endpoint":"tcp://*:0","replay_endpoint":"tcp://*:0"` + extra + `}`
}

func startKV(t *testing.T, engine, extra string) *grpcsim.Server {
	t.Helper()
	return start(t, grpcsim.Config{Engine: engine, Role: grpcsim.RoleDecode, KVEventsConfig: kvConfig(engine, extra)})
}

func publish(s *grpcsim.Server, evs ...kvcache.Event) { s.KVEventSink(0).Publish(evs) }

var (
	evStored = kvcache.Event{Stored: &kvcache.BlockStored{
		BlockHashes: []uint64{5, bigHash}, ParentBlockHash: 4, HasParent: true,
		TokenIDs: []uint32{1, 2, 3, 4, 5, 6}, BlockSize: 3, LoraID: 2,
	}}
	evRoot    = kvcache.Event{Stored: &kvcache.BlockStored{BlockHashes: []uint64{4}, TokenIDs: []uint32{7, 8, 9}, BlockSize: 3}}
	evRemoved = kvcache.Event{Removed: &kvcache.BlockRemoved{BlockHashes: []uint64{bigHash}}}
	evCleared = kvcache.Event{Cleared: true}
)

// Every engine's service streams stored, removed and cleared events with SMG's
// conversion: event ids counting up, one KvBlock per hash, signed 64-bit hashes.
func TestGRPCSubscribeKvEvents(t *testing.T) {
	t.Parallel()
	for _, engine := range []string{grpcsim.EngineVLLM, grpcsim.EngineSGLang, grpcsim.EngineTokenSpeed} {
		t.Run(engine, func(t *testing.T) {
			t.Parallel()
			s := startKV(t, engine, "")
			st, err := kvSubscribe(t, s, 0)
			require.NoError(t, err)
			publish(s, evRoot, evStored)
			publish(s, evRemoved, evCleared)

			b, err := st.Recv()
			require.NoError(t, err)
			assert.Equal(t, uint64(0), b.GetSequenceNumber())
			assert.Positive(t, b.GetTimestamp())
			require.NotNil(t, b.DpRank)
			assert.Equal(t, int32(0), b.GetDpRank())
			require.Len(t, b.GetEvents(), 2)
			root, child := b.GetEvents()[0], b.GetEvents()[1]
			assert.Equal(t, []uint64{1, 2}, []uint64{root.GetEventId(), child.GetEventId()})
			assert.Nil(t, root.GetStored().ParentBlockHash, "a prompt's first block has no parent")
			require.Len(t, root.GetStored().GetBlocks(), 1)
			assert.Nil(t, root.GetStored().GetBlocks()[0].LoraId, "base model: no lora_id")
			cs := child.GetStored()
			require.NotNil(t, cs.ParentBlockHash)
			assert.Equal(t, int64(4), cs.GetParentBlockHash())
			require.Len(t, cs.GetBlocks(), 2)
			assert.Equal(t, int64(5), cs.GetBlocks()[0].GetBlockHash())
			assert.Equal(t, int64(-0x0F1E2D3C4B5A6979), cs.GetBlocks()[1].GetBlockHash(), "low 64 bits as signed int64")
			assert.Equal(t, []uint32{1, 2, 3}, cs.GetBlocks()[0].GetTokenIds())
			assert.Equal(t, []uint32{4, 5, 6}, cs.GetBlocks()[1].GetTokenIds())
			assert.Equal(t, int32(3), cs.GetBlocks()[1].GetBlockSize())
			assert.Equal(t, int64(2), cs.GetBlocks()[1].GetLoraId())

			b, err = st.Recv()
			require.NoError(t, err)
			assert.Equal(t, uint64(1), b.GetSequenceNumber())
			require.Len(t, b.GetEvents(), 2)
			assert.Equal(t, uint64(3), b.GetEvents()[0].GetEventId())
			assert.Equal(t, []int64{-0x0F1E2D3C4B5A6979}, b.GetEvents()[0].GetRemoved().GetBlockHashes())
			assert.NotNil(t, b.GetEvents()[1].GetCleared())
		})
	}
}

// start_sequence_number > 0 replays the buffer from it, then continues live; a cursor the
// buffer no longer holds is OUT_OF_RANGE.
func TestGRPCSubscribeKvEventsReplayAndOutOfRange(t *testing.T) {
	t.Parallel()
	s := startKV(t, grpcsim.EngineVLLM, `,"buffer_steps":3`)
	live, err := kvSubscribe(t, s, 0)
	require.NoError(t, err)
	for range 5 {
		publish(s, evCleared)
	}
	for want := range uint64(5) {
		b, err := live.Recv()
		require.NoError(t, err)
		require.Equal(t, want, b.GetSequenceNumber())
	}
	// The buffer keeps seq 2, 3, 4.
	st, err := kvSubscribe(t, s, 3)
	require.NoError(t, err)
	publish(s, evRemoved)
	for want := uint64(3); want <= 5; want++ {
		b, err := st.Recv()
		require.NoError(t, err)
		require.Equal(t, want, b.GetSequenceNumber())
		require.Equal(t, want+1, b.GetEvents()[0].GetEventId(), "replayed batches keep their event ids")
	}
	st, err = kvSubscribe(t, s, 1)
	if err == nil {
		_, err = st.Recv()
	}
	assert.Equal(t, codes.OutOfRange, status.Code(err), "%v", err)
}

// POST /sim/fault?kind=kv-events-gap withholds one batch from the live stream; the
// subscriber resubscribes from its last sequence number and gets it from the buffer.
// kind=kv-events-garbage ends the stream with DATA_LOSS.
func TestGRPCKvEventsRuntimeFaults(t *testing.T) {
	t.Parallel()
	s := startKV(t, grpcsim.EngineSGLang, "")
	st, err := kvSubscribe(t, s, 0)
	require.NoError(t, err)
	publish(s, evRoot)
	b, err := st.Recv()
	require.NoError(t, err)
	require.Equal(t, uint64(0), b.GetSequenceNumber())

	postFault(t, s, "kv-events-gap", http.StatusNoContent)
	publish(s, evStored)
	publish(s, evRemoved)
	b, err = st.Recv()
	require.NoError(t, err)
	require.Equal(t, uint64(2), b.GetSequenceNumber(), "seq 1 is withheld")
	re, err := kvSubscribe(t, s, 1)
	require.NoError(t, err)
	for want := uint64(1); want <= 2; want++ {
		b, err := re.Recv()
		require.NoError(t, err)
		require.Equal(t, want, b.GetSequenceNumber())
	}

	postFault(t, s, "kv-events-garbage", http.StatusNoContent)
	publish(s, evCleared)
	_, err = st.Recv()
	assert.Equal(t, codes.DataLoss, status.Code(err), "%v", err)

	req, _ := http.NewRequest(http.MethodDelete, s.StatsURL()+"/sim/fault", nil)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	_ = resp.Body.Close()
}

// Without --kv-events-config the RPC is UNIMPLEMENTED and the KV event faults are refused.
func TestGRPCKvEventsDisabled(t *testing.T) {
	t.Parallel()
	s := start(t, grpcsim.Config{Engine: grpcsim.EngineVLLM, Role: grpcsim.RolePrefill})
	assert.Nil(t, s.KVEventSink(0))
	st, err := kvSubscribe(t, s, 0)
	if err == nil {
		_, err = st.Recv()
	}
	assert.Equal(t, codes.Unimplemented, status.Code(err), "%v", err)
	postFault(t, s, "kv-events-stall", http.StatusBadRequest)

	_, err = grpcsim.Start(grpcsim.Config{Engine: grpcsim.EngineVLLM, Role: grpcsim.RoleDecode, KVEventsConfig: `{"enable_kv_cache_events":true,"topics":"x"}`})
	assert.ErrorContains(t, err, "topics")
}

func postFault(t *testing.T, s *grpcsim.Server, kind string, want int) {
	t.Helper()
	resp, err := http.Post(s.StatsURL()+"/sim/fault?kind="+kind, "", nil)
	require.NoError(t, err)
	_ = resp.Body.Close()
	require.Equal(t, want, resp.StatusCode, kind)
}

// A request's prompt reaches SubscribeKvEvents as the cache stores it: its full pages,
// with their token ids (the cache publishes through the streamed rank's publisher and to
// Config.KVEventSink).
func TestGRPCGenerateStreamsStoredBlocks(t *testing.T) {
	t.Parallel()
	rec := &sinkRec{}
	s := start(t, grpcsim.Config{Engine: grpcsim.EngineSGLang, Role: grpcsim.RolePrefill, KVEventSink: rec,
		KVEventsConfig: kvConfig(grpcsim.EngineSGLang, "")})
	st, err := kvSubscribe(t, s, 0)
	require.NoError(t, err)
	c := sglangpb.NewSglangSchedulerClient(dial(t, s))
	fake := &sglangpb.DisaggregatedParams{BootstrapHost: wire.FakeBootstrapHost, BootstrapRoom: 9}
	r := sgGenerate(ctxT(t, 10*time.Second), c, sgReq("kv-1", prompt(40), 1, false, fake))
	require.NoError(t, r.err)

	b, err := st.Recv()
	require.NoError(t, err)
	require.Len(t, b.GetEvents(), 1)
	blocks := b.GetEvents()[0].GetStored().GetBlocks()
	require.Len(t, blocks, 2, "40 tokens in pages of 16: two full pages")
	assert.Equal(t, prompt(40)[:16], blocks[0].GetTokenIds())
	assert.Equal(t, prompt(40)[16:32], blocks[1].GetTokenIds())
	assert.Equal(t, int32(16), blocks[0].GetBlockSize())
	evs := rec.events()
	require.Len(t, evs, 1, "Config.KVEventSink receives the same events")
	assert.Equal(t, int64(evs[0].Stored.BlockHashes[1]), blocks[1].GetBlockHash())
}
