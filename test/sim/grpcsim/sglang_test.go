package grpcsim_test

import (
	"context"
	"io"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	sglangpb "github.com/smg-go/smg/adapters/engine/grpcengine/pb/sglang"
	"github.com/smg-go/smg/test/sim/grpcsim"
)

// sgResult is what one SGLang Generate stream delivered.
type sgResult struct {
	chunks   []*sglangpb.GenerateStreamChunk
	complete *sglangpb.GenerateComplete
	err      error
}

func sgGenerate(ctx context.Context, c sglangpb.SglangSchedulerClient, req *sglangpb.GenerateRequest) sgResult {
	st, err := c.Generate(ctx, req)
	if err != nil {
		return sgResult{err: err}
	}
	var r sgResult
	for {
		m, err := st.Recv()
		if err == io.EOF {
			return r
		}
		if err != nil {
			r.err = err
			return r
		}
		if ch := m.GetChunk(); ch != nil {
			r.chunks = append(r.chunks, ch)
		}
		if c := m.GetComplete(); c != nil {
			r.complete = c
		}
	}
}

func sgReq(id string, ids []uint32, maxTokens uint32, stream bool, dp *sglangpb.DisaggregatedParams) *sglangpb.GenerateRequest {
	return &sglangpb.GenerateRequest{RequestId: id, Tokenized: &sglangpb.TokenizedInput{InputIds: ids}, Stream: stream,
		SamplingParams: &sglangpb.SamplingParams{MaxNewTokens: u32(maxTokens)}, DisaggregatedParams: dp}
}

func TestSGLangMatchedHandoff(t *testing.T) {
	t.Parallel()
	p := start(t, grpcsim.Config{Engine: grpcsim.EngineSGLang, Role: grpcsim.RolePrefill})
	d := start(t, grpcsim.Config{Engine: grpcsim.EngineSGLang, Role: grpcsim.RoleDecode})
	pc, dc := sglangpb.NewSglangSchedulerClient(dial(t, p)), sglangpb.NewSglangSchedulerClient(dial(t, d))
	ids := prompt(12)
	dp := &sglangpb.DisaggregatedParams{BootstrapHost: "127.0.0.1", BootstrapPort: int32(p.BootstrapPort()), BootstrapRoom: 4242}
	ctx := ctxT(t, 10*time.Second)

	done := make(chan sgResult, 1)
	go func() { done <- sgGenerate(ctx, pc, sgReq("r1", ids, 5, false, dp)) }()
	dr := sgGenerate(ctx, dc, sgReq("r1", ids, 5, true, dp))
	pr := <-done
	require.NoError(t, pr.err)
	require.NoError(t, dr.err)

	want := grpcsim.HandoffTokens(ids, 5)
	require.Len(t, dr.chunks, 5, "one delta chunk per token")
	for i, ch := range dr.chunks {
		assert.Equal(t, []uint32{want[i]}, ch.GetTokenIds(), "delta %d", i)
		assert.Equal(t, uint32(i+1), ch.GetCompletionTokens(), "cumulative completion_tokens")
		assert.Equal(t, uint32(12), ch.GetPromptTokens())
		assert.Equal(t, uint32(12), ch.GetCachedTokens(), "the whole prompt came through the handoff")
	}
	require.NotNil(t, dr.complete)
	assert.Equal(t, "length", dr.complete.GetFinishReason())
	assert.Equal(t, uint32(5), dr.complete.GetCompletionTokens())
	assert.Equal(t, want[4:], dr.complete.GetOutputIds(), "streaming: the complete repeats the final delta")
	assert.Equal(t, grpcsim.RecomputeTokens(ids, 1), pr.complete.GetOutputIds(), "the prefill leg computes one token")

	assert.Equal(t, int64(1), p.Stats().HandoffsSent)
	assert.Equal(t, int64(1), d.Stats().HandoffsReceived)
	assert.Equal(t, int64(0), d.Stats().RecomputedPrompts)
	assert.Equal(t, int64(1), httpStats(t, d).HandoffsReceived, "/sim/stats serves the same counters")
	assert.Zero(t, p.PendingHandoffs())
}

func TestSGLangWrongRoomFailsTheDecodeWithinTheHandoffTimeout(t *testing.T) {
	t.Parallel()
	timeout := 300 * time.Millisecond
	p := start(t, grpcsim.Config{Engine: grpcsim.EngineSGLang, Role: grpcsim.RolePrefill, HandoffTimeout: timeout})
	d := start(t, grpcsim.Config{Engine: grpcsim.EngineSGLang, Role: grpcsim.RoleDecode, HandoffTimeout: timeout})
	pc, dc := sglangpb.NewSglangSchedulerClient(dial(t, p)), sglangpb.NewSglangSchedulerClient(dial(t, d))
	ids := prompt(4)
	ctx := ctxT(t, 10*time.Second)
	done := make(chan sgResult, 1)
	go func() {
		done <- sgGenerate(ctx, pc, sgReq("a", ids, 3, false, &sglangpb.DisaggregatedParams{BootstrapHost: "127.0.0.1", BootstrapPort: int32(p.BootstrapPort()), BootstrapRoom: 1}))
	}()
	startT := time.Now()
	dr := sgGenerate(ctx, dc, sgReq("a", ids, 3, false, &sglangpb.DisaggregatedParams{BootstrapHost: "127.0.0.1", BootstrapPort: int32(p.BootstrapPort()), BootstrapRoom: 2}))
	elapsed := time.Since(startT)
	assert.Equal(t, codes.Internal, status.Code(dr.err), "%v", dr.err)
	assert.Contains(t, status.Convert(dr.err).Message(), "KVTransferError(bootstrap_room=2): Request 2 timed out after")
	assert.Contains(t, status.Convert(dr.err).Message(), "in KVPoll.WaitingForInput")
	assert.Less(t, elapsed, timeout+2*time.Second, "bounded by the handoff timeout")
	pr := <-done
	assert.Equal(t, codes.Internal, status.Code(pr.err), "the prefill's room is never claimed: %v", pr.err)
	assert.Equal(t, "KVTransferError(bootstrap_room=1): Request 1 timed out after "+strconv.FormatFloat(timeout.Seconds(), 'f', -1, 64)+"s in KVPoll.Bootstrapping",
		status.Convert(pr.err).Message())
	assert.Equal(t, int64(1), d.Stats().UnmatchedRooms)
	assert.Equal(t, int64(1), p.Stats().UnmatchedRooms)
	assert.Equal(t, int64(0), d.Stats().HandoffsReceived)
	assert.Equal(t, int64(1), d.Stats().Errors)
}

func TestSGLangDecodeWithoutRoomRecomputesAndNonStreamingSendsOneComplete(t *testing.T) {
	t.Parallel()
	d := start(t, grpcsim.Config{Engine: grpcsim.EngineSGLang, Role: grpcsim.RoleDecode, PageSize: 2})
	dc := sglangpb.NewSglangSchedulerClient(dial(t, d))
	ids := prompt(6)
	r := sgGenerate(ctxT(t, 5*time.Second), dc, sgReq("x", ids, 4, false, nil))
	require.NoError(t, r.err)
	assert.Empty(t, r.chunks, "stream=false: only a complete")
	assert.Equal(t, grpcsim.RecomputeTokens(ids, 4), r.complete.GetOutputIds())
	assert.Equal(t, uint32(0), r.complete.GetCachedTokens())
	assert.Equal(t, int64(1), d.Stats().RecomputedPrompts)

	r = sgGenerate(ctxT(t, 5*time.Second), dc, sgReq("y", ids, 4, false, nil))
	require.NoError(t, r.err)
	assert.Equal(t, uint32(4), r.complete.GetCachedTokens(), "a repeated prompt hits the prefix cache: whole pages of 2, leaving one token to compute")
}

func TestSGLangErrorsAreStatuses(t *testing.T) {
	t.Parallel()
	d := start(t, grpcsim.Config{Engine: grpcsim.EngineSGLang, Role: grpcsim.RoleDecode, MaxModelLen: 8})
	dc := sglangpb.NewSglangSchedulerClient(dial(t, d))
	ctx := ctxT(t, 5*time.Second)
	assert.Equal(t, codes.InvalidArgument, status.Code(sgGenerate(ctx, dc, sgReq("e", nil, 1, false, nil)).err), "empty input")
	assert.Equal(t, codes.InvalidArgument, status.Code(sgGenerate(ctx, dc, sgReq("e", prompt(9), 1, false, nil)).err), "over the context length")
	_, err := dc.GetTokenizer(ctx, nil)
	if err == nil {
		st, _ := dc.GetTokenizer(ctx, nil)
		_, err = st.Recv()
	}
	assert.Equal(t, codes.FailedPrecondition, status.Code(err), "no tokenizer path")
	_, err = dc.Embed(ctx, &sglangpb.EmbedRequest{})
	assert.Equal(t, codes.Unimplemented, status.Code(err))
}

func TestNGreaterThanOneStreamsIndexedSamples(t *testing.T) {
	t.Parallel()
	d := start(t, grpcsim.Config{Engine: grpcsim.EngineSGLang, Role: grpcsim.RoleDecode})
	dc := sglangpb.NewSglangSchedulerClient(dial(t, d))
	ids := prompt(4)
	req := sgReq("n2", ids, 3, true, nil)
	req.SamplingParams.N = 2
	st, err := dc.Generate(ctxT(t, 5*time.Second), req)
	require.NoError(t, err)
	got := map[uint32][]uint32{}
	var completes []*sglangpb.GenerateComplete
	var order []uint32
	for {
		m, err := st.Recv()
		if err == io.EOF {
			break
		}
		require.NoError(t, err)
		if ch := m.GetChunk(); ch != nil {
			got[ch.GetIndex()] = append(got[ch.GetIndex()], ch.GetTokenIds()...)
			order = append(order, ch.GetIndex())
			assert.Equal(t, uint32(len(got[ch.GetIndex()])), ch.GetCompletionTokens(), "cumulative per sample")
		}
		if c := m.GetComplete(); c != nil {
			completes = append(completes, c)
		}
	}
	assert.Equal(t, []uint32{0, 1, 0, 1, 0, 1}, order, "samples interleave step by step")
	assert.Equal(t, grpcsim.RecomputeTokens(ids, 3), got[0])
	assert.Equal(t, grpcsim.SampleTokens(ids, false, 1, 3), got[1])
	assert.NotEqual(t, got[0], got[1])
	require.Len(t, completes, 2)
	assert.Equal(t, []uint32{0, 1}, []uint32{completes[0].GetIndex(), completes[1].GetIndex()})
}
