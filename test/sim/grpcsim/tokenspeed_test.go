package grpcsim_test

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	tokenspeedpb "github.com/smg-go/smg/adapters/engine/grpcengine/pb/tokenspeed"
	"github.com/smg-go/smg/test/sim/grpcsim"
)

type tsResult struct {
	chunks   []*tokenspeedpb.GenerateStreamChunk
	complete *tokenspeedpb.GenerateComplete
	err      error
}

func tsGenerate(ctx context.Context, c tokenspeedpb.TokenSpeedSchedulerClient, req *tokenspeedpb.GenerateRequest) tsResult {
	st, err := c.Generate(ctx, req)
	if err != nil {
		return tsResult{err: err}
	}
	var r tsResult
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

func tsReq(id string, ids []uint32, n uint32, stream bool, kb *tokenspeedpb.KvBootstrapInfo) *tokenspeedpb.GenerateRequest {
	return &tokenspeedpb.GenerateRequest{RequestId: id, Tokenized: &tokenspeedpb.TokenizedInput{InputIds: ids}, Stream: stream,
		SamplingParams: &tokenspeedpb.SamplingParams{MaxNewTokens: u32(n)}, KvBootstrapInfo: kb}
}

func TestTokenSpeedMatchedHandoffWithInt64Room(t *testing.T) {
	t.Parallel()
	p := start(t, grpcsim.Config{Engine: grpcsim.EngineTokenSpeed, Role: grpcsim.RolePrefill})
	d := start(t, grpcsim.Config{Engine: grpcsim.EngineTokenSpeed, Role: grpcsim.RoleDecode})
	pc, dc := tokenspeedpb.NewTokenSpeedSchedulerClient(dial(t, p)), tokenspeedpb.NewTokenSpeedSchedulerClient(dial(t, d))
	ids := prompt(9)
	kb := &tokenspeedpb.KvBootstrapInfo{BootstrapHost: "127.0.0.1", BootstrapPort: int32(p.BootstrapPort()), BootstrapRoom: 1 << 40}
	ctx := ctxT(t, 10*time.Second)
	done := make(chan tsResult, 1)
	go func() { done <- tsGenerate(ctx, pc, tsReq("t1", ids, 3, true, kb)) }()
	dr := tsGenerate(ctx, dc, tsReq("t1", ids, 3, false, kb))
	require.NoError(t, (<-done).err)
	require.NoError(t, dr.err)
	assert.Equal(t, grpcsim.HandoffTokens(ids, 3), dr.complete.GetOutputIds())
	assert.Equal(t, uint32(9), dr.complete.GetCachedTokens())
	assert.Equal(t, int64(1), p.Stats().HandoffsSent)
	assert.Equal(t, int64(1), d.Stats().HandoffsReceived)
}

// A prefill leg pinned to a rank its room's residue contradicts is refused (the gateway
// minted the room for another rank); TokenSpeed itself places every leg by residue.
func TestTokenSpeedRoomResidueMustMatchThePrefillPin(t *testing.T) {
	t.Parallel()
	p := start(t, grpcsim.Config{Engine: grpcsim.EngineTokenSpeed, Role: grpcsim.RolePrefill, DPSize: 4})
	pc := tokenspeedpb.NewTokenSpeedSchedulerClient(dial(t, p))
	req := tsReq("t", prompt(3), 1, false,
		&tokenspeedpb.KvBootstrapInfo{BootstrapHost: "127.0.0.1", BootstrapPort: 1, BootstrapRoom: 4*1000 + 2})
	one := int32(1)
	req.DataParallelRank = &one
	r := tsGenerate(ctxT(t, 5*time.Second), pc, req)
	assert.Equal(t, codes.InvalidArgument, status.Code(r.err))
	assert.Contains(t, status.Convert(r.err).Message(), "dp rank 2")
}

func TestTokenSpeedWrongRoomAndMissingRoom(t *testing.T) {
	t.Parallel()
	timeout := 250 * time.Millisecond
	p := start(t, grpcsim.Config{Engine: grpcsim.EngineTokenSpeed, Role: grpcsim.RolePrefill, HandoffTimeout: timeout})
	d := start(t, grpcsim.Config{Engine: grpcsim.EngineTokenSpeed, Role: grpcsim.RoleDecode, HandoffTimeout: timeout})
	dc := tokenspeedpb.NewTokenSpeedSchedulerClient(dial(t, d))
	ctx := ctxT(t, 10*time.Second)
	begin := time.Now()
	r := tsGenerate(ctx, dc, tsReq("w", prompt(3), 2, false,
		&tokenspeedpb.KvBootstrapInfo{BootstrapHost: "127.0.0.1", BootstrapPort: int32(p.BootstrapPort()), BootstrapRoom: 77}))
	assert.Equal(t, codes.Internal, status.Code(r.err))
	assert.Less(t, time.Since(begin), timeout+2*time.Second)
	assert.Equal(t, int64(1), d.Stats().UnmatchedRooms)

	r = tsGenerate(ctx, dc, tsReq("m", prompt(3), 2, false, nil))
	require.NoError(t, r.err)
	assert.Equal(t, grpcsim.RecomputeTokens(prompt(3), 2), r.complete.GetOutputIds())
	assert.Equal(t, int64(1), d.Stats().RecomputedPrompts)
}

// Abort matches the request and its "-n<i>" children; the stream ends with finish "abort".
func TestTokenSpeedAbortRPCEndsTheStream(t *testing.T) {
	t.Parallel()
	d := start(t, grpcsim.Config{Engine: grpcsim.EngineTokenSpeed, Role: grpcsim.RoleDecode, ITL: 50 * time.Millisecond})
	dc := tokenspeedpb.NewTokenSpeedSchedulerClient(dial(t, d))
	ctx := ctxT(t, 10*time.Second)
	done := make(chan tsResult, 1)
	go func() { done <- tsGenerate(ctx, dc, tsReq("job-n1", prompt(3), 1000, true, nil)) }()
	require.Eventually(t, func() bool { return d.Stats().Running == 1 }, waitFor, tick)
	resp, err := dc.Abort(ctx, &tokenspeedpb.AbortRequest{RequestId: "job", Reason: "test"})
	require.NoError(t, err)
	assert.True(t, resp.GetSuccess())
	r := <-done
	require.NoError(t, r.err)
	assert.Equal(t, "abort", r.complete.GetFinishReason())
	assert.Less(t, len(r.chunks), 1000)
	st := d.Stats()
	assert.Equal(t, int64(1), st.Aborted)
	assert.Equal(t, int64(1), st.AbortRPCs)
	assert.NotZero(t, st.LastAbortUnixMs)

	resp, err = dc.Abort(ctx, &tokenspeedpb.AbortRequest{RequestId: "gone"})
	require.NoError(t, err)
	assert.False(t, resp.GetSuccess())
	assert.Equal(t, "not found", resp.GetMessage())
}
