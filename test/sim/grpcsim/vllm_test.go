package grpcsim_test

import (
	"context"
	"encoding/json"
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	vllmpb "github.com/smg-go/smg/adapters/engine/grpcengine/pb/vllm"
	"github.com/smg-go/smg/test/sim/grpcsim"
)

type vResult struct {
	chunks   []*vllmpb.GenerateStreamChunk
	complete *vllmpb.GenerateComplete
	err      error
}

func vGenerate(ctx context.Context, c vllmpb.VllmEngineClient, req *vllmpb.GenerateRequest) vResult {
	st, err := c.Generate(ctx, req)
	if err != nil {
		return vResult{err: err}
	}
	var r vResult
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

func vReq(id string, ids []uint32, n uint32, params map[string]any) *vllmpb.GenerateRequest {
	r := &vllmpb.GenerateRequest{RequestId: id, Input: &vllmpb.GenerateRequest_Tokenized{Tokenized: &vllmpb.TokenizedInput{InputIds: ids}},
		SamplingParams: &vllmpb.SamplingParams{MaxTokens: u32(n)}}
	if params != nil {
		b, _ := json.Marshal(params)
		s := string(b)
		r.KvTransferParamsJson = &s
	}
	return r
}

func TestVLLMNixlPull(t *testing.T) {
	t.Parallel()
	p := start(t, grpcsim.Config{Engine: grpcsim.EngineVLLM, Role: grpcsim.RolePrefill, EngineID: "pe"})
	d := start(t, grpcsim.Config{Engine: grpcsim.EngineVLLM, Role: grpcsim.RoleDecode})
	pc, dc := vllmpb.NewVllmEngineClient(dial(t, p)), vllmpb.NewVllmEngineClient(dial(t, d))
	ids := prompt(7)
	ctx := ctxT(t, 10*time.Second)
	pr := vGenerate(ctx, pc, vReq("v1", ids, 1, map[string]any{"do_remote_decode": true, "do_remote_prefill": false}))
	require.NoError(t, pr.err)
	require.NotNil(t, pr.complete.KvTransferParamsJson, "a NIXL prefill returns engine-shaped params")
	var params map[string]any
	require.NoError(t, json.Unmarshal([]byte(pr.complete.GetKvTransferParamsJson()), &params))
	assert.Equal(t, true, params["do_remote_prefill"])
	assert.Equal(t, "pe", params["remote_engine_id"])
	assert.Equal(t, float64(p.BootstrapPort()), params["remote_port"])
	groups, _ := params["remote_block_ids"].([]any)
	require.Len(t, groups, 1, "one block list per KV-cache group")
	assert.Len(t, groups[0], 1, "7 prompt tokens fit one 16-token block")
	assert.NotEmpty(t, params["remote_request_id"])

	dr := vGenerate(ctx, dc, vReq("v1", ids, 4, params))
	require.NoError(t, dr.err)
	assert.Equal(t, grpcsim.HandoffTokens(ids, 4), dr.complete.GetOutputIds())
	assert.Equal(t, uint32(7), dr.complete.GetCachedTokens())
	assert.Equal(t, int64(1), d.Stats().HandoffsReceived)
	assert.Equal(t, int64(1), p.Stats().HandoffsSent)

	// The blocks are consumed: pulling them again fails.
	dr = vGenerate(ctx, dc, vReq("v2", ids, 4, params))
	assert.Equal(t, codes.Internal, status.Code(dr.err))
}

func TestVLLMMissingParamsRecompute(t *testing.T) {
	t.Parallel()
	d := start(t, grpcsim.Config{Engine: grpcsim.EngineVLLM, Role: grpcsim.RoleDecode})
	dc := vllmpb.NewVllmEngineClient(dial(t, d))
	ctx := ctxT(t, 5*time.Second)
	for _, params := range []map[string]any{nil, {"do_remote_prefill": true}, {"do_remote_prefill": false, "remote_host": "h"},
		{"do_remote_prefill": true, "remote_host": "127.0.0.1", "remote_port": 1, "remote_block_ids": [][]int{{1}}, "remote_engine_id": "e"}} {
		r := vGenerate(ctx, dc, vReq("m", prompt(3), 2, params))
		require.NoError(t, r.err)
		assert.Equal(t, grpcsim.RecomputeTokens(prompt(3), 2), r.complete.GetOutputIds())
	}
	assert.Equal(t, int64(4), d.Stats().RecomputedPrompts, "without remote_request_id vLLM recomputes")

	bad := "[1,2]"
	r := vGenerate(ctx, dc, &vllmpb.GenerateRequest{RequestId: "b", KvTransferParamsJson: &bad,
		Input: &vllmpb.GenerateRequest_Tokenized{Tokenized: &vllmpb.TokenizedInput{InputIds: prompt(2)}}})
	assert.Equal(t, codes.InvalidArgument, status.Code(r.err), "kv_transfer_params_json must be an object")
}

func TestVLLMNoKVParamsFault(t *testing.T) {
	t.Parallel()
	p := start(t, grpcsim.Config{Engine: grpcsim.EngineVLLM, Role: grpcsim.RolePrefill, Faults: []string{grpcsim.FaultNoKVParams}})
	r := vGenerate(ctxT(t, 5*time.Second), vllmpb.NewVllmEngineClient(dial(t, p)), vReq("f", prompt(2), 1, map[string]any{"do_remote_decode": true}))
	require.NoError(t, r.err)
	assert.Nil(t, r.complete.KvTransferParamsJson)
	assert.Zero(t, p.PendingHandoffs())
}

func TestVLLMMooncakePushFetch(t *testing.T) {
	t.Parallel()
	p := start(t, grpcsim.Config{Engine: grpcsim.EngineVLLM, Role: grpcsim.RolePrefill, KVConnector: grpcsim.ConnectorMooncake, EngineID: "mc-eng"})
	d := start(t, grpcsim.Config{Engine: grpcsim.EngineVLLM, Role: grpcsim.RoleDecode, KVConnector: grpcsim.ConnectorMooncake,
		HandoffTimeout: 300 * time.Millisecond})
	pc, dc := vllmpb.NewVllmEngineClient(dial(t, p)), vllmpb.NewVllmEngineClient(dial(t, d))
	ids := prompt(5)
	ctx := ctxT(t, 10*time.Second)
	addr := "http://127.0.0.1:" + itoa(p.BootstrapPort())

	pr := vGenerate(ctx, pc, vReq("m1", ids, 1, map[string]any{"do_remote_decode": true, "do_remote_prefill": false, "transfer_id": "xfer-1"}))
	require.NoError(t, pr.err)
	assert.Nil(t, pr.complete.KvTransferParamsJson, "a Mooncake prefill returns nothing")
	dr := vGenerate(ctx, dc, vReq("m1", ids, 3, map[string]any{"do_remote_decode": false, "do_remote_prefill": true,
		"transfer_id": "xfer-1", "remote_engine_id": "mc-eng", "remote_bootstrap_addr": addr}))
	require.NoError(t, dr.err)
	assert.Equal(t, grpcsim.HandoffTokens(ids, 3), dr.complete.GetOutputIds())
	require.Eventually(t, func() bool { return p.Stats().HandoffsSent == 1 }, waitFor, tick)

	// A wrong engine id (a restarted prefill) is refused within the handoff timeout.
	pr = vGenerate(ctx, pc, vReq("m2", ids, 1, map[string]any{"do_remote_decode": true, "transfer_id": "xfer-2"}))
	require.NoError(t, pr.err)
	dr = vGenerate(ctx, dc, vReq("m2", ids, 3, map[string]any{"do_remote_prefill": true, "transfer_id": "xfer-2",
		"remote_engine_id": "stale", "remote_bootstrap_addr": addr}))
	assert.Equal(t, codes.Internal, status.Code(dr.err))
	assert.Contains(t, status.Convert(dr.err).Message(), "stale")
	assert.Equal(t, int64(1), d.Stats().UnmatchedRooms)
}

func TestVLLMAbortAndCancellation(t *testing.T) {
	t.Parallel()
	d := start(t, grpcsim.Config{Engine: grpcsim.EngineVLLM, Role: grpcsim.RoleDecode, ITL: 20 * time.Millisecond})
	dc := vllmpb.NewVllmEngineClient(dial(t, d))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan vResult, 1)
	go func() { done <- vGenerate(ctx, dc, vReq("c1", prompt(2), 1000, nil)) }()
	require.Eventually(t, func() bool { return d.Stats().Running == 1 }, waitFor, tick)
	cancel()
	r := <-done
	assert.Equal(t, codes.Canceled, status.Code(r.err))
	require.Eventually(t, func() bool { return d.Stats().Aborted == 1 && d.Stats().Running == 0 }, waitFor, tick)

	ctx2 := ctxT(t, 10*time.Second)
	go func() { done <- vGenerate(ctx2, dc, vReq("c2", prompt(2), 1000, nil)) }()
	require.Eventually(t, func() bool { return d.Stats().Running == 1 }, waitFor, tick)
	_, err := dc.Abort(ctx2, &vllmpb.AbortRequest{RequestIds: []string{"c2", "other"}})
	require.NoError(t, err)
	r = <-done
	require.NoError(t, r.err)
	assert.Equal(t, "abort", r.complete.GetFinishReason())
	assert.Equal(t, int64(2), d.Stats().AbortRPCs)
}

func TestVLLMWrongBlocksFailWithinTheHandoffTimeoutAndMooncakeWithoutIDRecomputes(t *testing.T) {
	t.Parallel()
	timeout := 250 * time.Millisecond
	p := start(t, grpcsim.Config{Engine: grpcsim.EngineVLLM, Role: grpcsim.RolePrefill})
	d := start(t, grpcsim.Config{Engine: grpcsim.EngineVLLM, Role: grpcsim.RoleDecode, HandoffTimeout: timeout})
	dc := vllmpb.NewVllmEngineClient(dial(t, d))
	ctx := ctxT(t, 10*time.Second)
	begin := time.Now()
	r := vGenerate(ctx, dc, vReq("w", prompt(3), 2, map[string]any{"do_remote_prefill": true, "remote_block_ids": [][]int{{1}},
		"remote_request_id": "nope", "remote_engine_id": p.Config().EngineID, "remote_host": "127.0.0.1", "remote_port": p.BootstrapPort()}))
	assert.Equal(t, codes.Internal, status.Code(r.err))
	assert.Less(t, time.Since(begin), timeout+2*time.Second)
	assert.Equal(t, int64(1), d.Stats().UnmatchedRooms)

	md := start(t, grpcsim.Config{Engine: grpcsim.EngineVLLM, Role: grpcsim.RoleDecode, KVConnector: grpcsim.ConnectorMooncake})
	r = vGenerate(ctx, vllmpb.NewVllmEngineClient(dial(t, md)), &vllmpb.GenerateRequest{RequestId: "legacy",
		Input:            &vllmpb.GenerateRequest_Tokenized{Tokenized: &vllmpb.TokenizedInput{InputIds: prompt(3)}},
		KvTransferParams: &vllmpb.KvTransferParams{RemoteHost: "127.0.0.1", RemotePort: 8998}})
	require.NoError(t, r.err)
	assert.Equal(t, grpcsim.RecomputeTokens(prompt(3), 16), r.complete.GetOutputIds(), "legacy host/port only: recompute")
	assert.Equal(t, int64(1), md.Stats().RecomputedPrompts)
}

func TestCancelledRPCIsAbortedNotAnError(t *testing.T) {
	t.Parallel()
	d := start(t, grpcsim.Config{Engine: grpcsim.EngineVLLM, Role: grpcsim.RoleDecode, ITL: 20 * time.Millisecond})
	dc := vllmpb.NewVllmEngineClient(dial(t, d))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan vResult, 1)
	go func() { done <- vGenerate(ctx, dc, vReq("c", prompt(2), 1000, nil)) }()
	require.Eventually(t, func() bool { return d.Stats().Running == 1 }, waitFor, tick)
	cancel()
	<-done
	require.Eventually(t, func() bool { return d.Stats().Running == 0 }, waitFor, tick)
	assert.Equal(t, int64(1), d.Stats().Aborted)
	assert.Equal(t, int64(0), d.Stats().Errors)
}
