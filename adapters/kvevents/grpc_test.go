package kvevents_test

import (
	"context"
	"net"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	commonpb "github.com/smg-go/smg/adapters/engine/grpcengine/pb/common"
	vllmpb "github.com/smg-go/smg/adapters/engine/grpcengine/pb/vllm"
	"github.com/smg-go/smg/adapters/kvevents"
	"github.com/smg-go/smg/domain/worker"
)

// kvServer is a VllmEngine whose SubscribeKvEvents follows a script, one step per call.
type kvServer struct {
	vllmpb.UnimplementedVllmEngineServer
	implemented bool
	script      []func(stream grpc.ServerStreamingServer[commonpb.KvEventBatch]) error

	mu     sync.Mutex
	starts []uint64
}

func (s *kvServer) SubscribeKvEvents(req *commonpb.SubscribeKvEventsRequest, stream grpc.ServerStreamingServer[commonpb.KvEventBatch]) error {
	if !s.implemented {
		return s.UnimplementedVllmEngineServer.SubscribeKvEvents(req, stream)
	}
	s.mu.Lock()
	call := len(s.starts)
	s.starts = append(s.starts, req.GetStartSequenceNumber())
	s.mu.Unlock()
	if call < len(s.script) {
		return s.script[call](stream)
	}
	<-stream.Context().Done() // idle, like an engine with nothing to report
	return nil
}

func (s *kvServer) startSeqs() []uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.starts)
}

// sends is a script step sending batches with the given sequence numbers, then ending
// the stream with err.
func sends(err error, seqs ...uint64) func(grpc.ServerStreamingServer[commonpb.KvEventBatch]) error {
	return func(stream grpc.ServerStreamingServer[commonpb.KvEventBatch]) error {
		for _, s := range seqs {
			if e := stream.Send(pbBatch(s)); e != nil {
				return e
			}
		}
		return err
	}
}

func pbBatch(seq uint64) *commonpb.KvEventBatch {
	return &commonpb.KvEventBatch{SequenceNumber: seq, Timestamp: float64(time.Now().UnixNano()) / 1e9,
		Events: []*commonpb.KvCacheEvent{{Data: &commonpb.KvCacheEvent_Stored{Stored: &commonpb.KvBlocksStored{
			Blocks: []*commonpb.KvBlock{{BlockHash: int64(seq) + 1000, TokenIds: u32s(int(seq)*4, 4), BlockSize: 4}}}}}}}
}

// runGRPC serves srv on loopback and runs a subscriber against it; the returned channel
// is closed when Run returns, with its error stored in *runErr.
func runGRPC(t *testing.T, srv *kvServer, sink *recSink) (g *kvevents.GRPC, done <-chan struct{}, runErr *error) {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	gs := grpc.NewServer()
	vllmpb.RegisterVllmEngineServer(gs, srv)
	go func() { _ = gs.Serve(lis) }()
	cc, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	g, err = kvevents.NewGRPC(kvevents.GRPCConfig{Client: vllmpb.NewVllmEngineClient(cc), Name: "grpc://" + lis.Addr().String(),
		Sink: sink, Options: fastOpts()})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	finished := make(chan struct{})
	runErr = new(error)
	go func() { *runErr = g.Run(ctx); close(finished) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-finished:
		case <-time.After(10 * time.Second):
			t.Error("Run did not return")
		}
		_ = cc.Close()
		gs.Stop()
	})
	return g, finished, runErr
}

func TestGRPCResubscribesFromTheLastSequence(t *testing.T) {
	srv := &kvServer{implemented: true, script: []func(grpc.ServerStreamingServer[commonpb.KvEventBatch]) error{
		sends(status.Error(codes.Unavailable, "engine going away"), 5, 6),
		sends(nil, 6, 7), // resumes inclusively: 6 again is a duplicate
	}}
	sink := &recSink{}
	g, _, _ := runGRPC(t, srv, sink)
	sink.waitFor(t, "b5", "b6", "b7")
	assert.Equal(t, []uint64{0, 6}, srv.startSeqs()[:2])
	h := g.Health()
	assert.Zero(t, h.Resets)
	assert.GreaterOrEqual(t, h.Reconnects, uint64(1))
	assert.Equal(t, uint64(7), h.LastSeq)
}

func TestGRPCGapReconnectsForReplay(t *testing.T) {
	srv := &kvServer{implemented: true, script: []func(grpc.ServerStreamingServer[commonpb.KvEventBatch]) error{
		sends(nil, 1, 2, 5),
		sends(nil, 2, 3, 4, 5, 6),
	}}
	sink := &recSink{}
	g, _, _ := runGRPC(t, srv, sink)
	sink.waitFor(t, "b1", "b2", "b3", "b4", "b5", "b6")
	assert.Equal(t, []uint64{0, 2}, srv.startSeqs()[:2])
	h := g.Health()
	assert.Equal(t, uint64(1), h.Gaps)
	assert.Equal(t, uint64(1), h.Replays)
	assert.Zero(t, h.Resets)
}

func TestGRPCGapTheServerCannotReplayResets(t *testing.T) {
	srv := &kvServer{implemented: true, script: []func(grpc.ServerStreamingServer[commonpb.KvEventBatch]) error{
		sends(nil, 1, 2, 5),
		sends(nil, 5, 6), // the replay starts past the gap again
	}}
	sink := &recSink{}
	g, _, _ := runGRPC(t, srv, sink)
	sink.waitFor(t, "b1", "b2", "reset:gap", "b5", "b6")
	assert.Equal(t, uint64(1), g.Health().Resets)
}

func TestGRPCOutOfRangeResetsAndResubscribesFromNow(t *testing.T) {
	srv := &kvServer{implemented: true, script: []func(grpc.ServerStreamingServer[commonpb.KvEventBatch]) error{
		sends(status.Error(codes.Unavailable, "blip"), 3, 4),
		sends(status.Error(codes.OutOfRange, "replay cursor expired")),
		sends(nil, 9),
	}}
	sink := &recSink{}
	g, _, _ := runGRPC(t, srv, sink)
	sink.waitFor(t, "b3", "b4", "reset:out_of_range", "b9")
	assert.Equal(t, []uint64{0, 4, 0}, srv.startSeqs()[:3])
	assert.Equal(t, uint64(1), g.Health().Resets)
}

func TestGRPCDataLossResets(t *testing.T) {
	srv := &kvServer{implemented: true, script: []func(grpc.ServerStreamingServer[commonpb.KvEventBatch]) error{
		sends(status.Error(codes.DataLoss, "subscriber fell behind"), 3),
		sends(nil, 20),
	}}
	sink := &recSink{}
	runGRPC(t, srv, sink)
	sink.waitFor(t, "b3", "reset:data_loss", "b20")
	assert.Equal(t, []uint64{0, 0}, srv.startSeqs()[:2])
}

func TestGRPCSequenceBackwardsIsARestart(t *testing.T) {
	srv := &kvServer{implemented: true, script: []func(grpc.ServerStreamingServer[commonpb.KvEventBatch]) error{
		sends(nil, 7, 8, 0, 1),
	}}
	sink := &recSink{}
	runGRPC(t, srv, sink)
	sink.waitFor(t, "b7", "b8", "reset:restart", "b0", "b1")
}

func TestGRPCUnimplementedDisablesTheWorker(t *testing.T) {
	sink := &recSink{}
	g, done, runErr := runGRPC(t, &kvServer{}, sink)
	select {
	case <-done:
		assert.ErrorIs(t, *runErr, kvevents.ErrDisabled)
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not stop on Unimplemented")
	}
	h := g.Health()
	assert.True(t, h.Disabled)
	assert.False(t, h.Connected)
	assert.Empty(t, sink.entries())
}

func TestGRPCBatchConversion(t *testing.T) {
	lora := int64(3)
	cpu := int32(1)
	dp := int32(2)
	parent := int64(-9)
	pb := &commonpb.KvEventBatch{SequenceNumber: 1, DpRank: &dp, Events: []*commonpb.KvCacheEvent{
		{Data: &commonpb.KvCacheEvent_Stored{Stored: &commonpb.KvBlocksStored{ParentBlockHash: &parent, Blocks: []*commonpb.KvBlock{
			{BlockHash: 1, TokenIds: u32s(0, 4), BlockSize: 4},
			{BlockHash: 2, TokenIds: u32s(4, 4), BlockSize: 4},
			{BlockHash: 3, TokenIds: u32s(8, 4), BlockSize: 4, LoraId: &lora},
			{BlockHash: 4, TokenIds: u32s(12, 4), CacheLevel: &cpu},
		}}}},
		{Data: &commonpb.KvCacheEvent_Removed{Removed: &commonpb.KvBlocksRemoved{BlockHashes: []int64{-1, 2}}}},
		{Data: &commonpb.KvCacheEvent_Cleared{Cleared: &commonpb.KvCacheCleared{}}},
	}}
	b := kvevents.FromProto(proto.Clone(pb).(*commonpb.KvEventBatch))
	assert.Equal(t, 2, b.DPRank)
	require.Len(t, b.Events, 5)
	assert.Equal(t, uint64(0xFFFFFFFFFFFFFFF7), b.Events[0].Parent)
	assert.Len(t, b.Events[0].Blocks, 2)
	assert.Equal(t, uint64(2), b.Events[1].Parent, "a run after a LoRA change chains after the previous run")
	assert.Equal(t, int64(3), b.Events[1].LoRAID)
	assert.Equal(t, "L1", b.Events[2].Medium)
	assert.Equal(t, 4, b.Events[2].BlockSize, "block size 0 falls back to the token count")
	assert.Equal(t, []uint64{0xFFFFFFFFFFFFFFFF, 2}, b.Events[3].Removed)
	assert.Equal(t, "AllBlocksCleared", b.Events[4].Kind.String())
}

func TestClientForPicksTheEngineService(t *testing.T) {
	t.Parallel()
	cc, err := grpc.NewClient("127.0.0.1:1", grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	defer cc.Close()
	for _, rt := range []worker.Runtime{worker.RuntimeSGLang, worker.RuntimeVLLM, worker.RuntimeTokenSpeed} {
		c, err := kvevents.ClientFor(worker.Worker{Runtime: rt}, cc)
		require.NoError(t, err, rt)
		assert.NotNil(t, c)
	}
	_, err = kvevents.ClientFor(worker.Worker{Runtime: worker.RuntimeTRTLLM}, cc)
	assert.Error(t, err)
}

func TestGRPCIdleStreamIsConnectedAndShowsAsStalled(t *testing.T) {
	srv := &kvServer{implemented: true, script: []func(grpc.ServerStreamingServer[commonpb.KvEventBatch]) error{
		func(stream grpc.ServerStreamingServer[commonpb.KvEventBatch]) error {
			if err := stream.SendHeader(metadata.MD{}); err != nil {
				return err
			}
			<-stream.Context().Done()
			return nil
		},
	}}
	g, _, _ := runGRPC(t, srv, &recSink{})
	require.Eventually(t, func() bool { return g.Health().Connected }, 10*time.Second, 5*time.Millisecond,
		"an accepted subscription is connected before any batch")
	h := g.Health()
	assert.False(t, h.HasSeq)
	assert.True(t, h.Stalled(h.ConnectedAt.Add(time.Minute), 30*time.Second))
}
