package grpcsim_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	commonpb "github.com/smg-go/smg/adapters/engine/grpcengine/pb/common"
	sglangpb "github.com/smg-go/smg/adapters/engine/grpcengine/pb/sglang"
	vllmpb "github.com/smg-go/smg/adapters/engine/grpcengine/pb/vllm"
	"github.com/smg-go/smg/test/sim/grpcsim"
)

// published lists, per message, the field numbers the published servicers can set (SMG's
// vLLM servicer as current vLLM ships it; grpc.md §1.1): a newer servicer's fields are absent.
var published = map[protoreflect.FullName][]protoreflect.FieldNumber{
	"vllm.grpc.engine.GetServerInfoResponse": {1, 2, 3, 4, 5, 6, 7, 8, 9, 10},
	"vllm.grpc.engine.GenerateComplete":      {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12},
}

// extraFields decodes m's wire bytes with the generated stubs and names every set field a
// published servicer would not send, and every field the stubs do not know, at any depth.
func extraFields(t *testing.T, m proto.Message) []string {
	t.Helper()
	b, err := proto.Marshal(m)
	require.NoError(t, err)
	back := m.ProtoReflect().New().Interface()
	require.NoError(t, proto.Unmarshal(b, back))
	var out []string
	var walk func(protoreflect.Message)
	walk = func(r protoreflect.Message) {
		if len(r.GetUnknown()) > 0 {
			out = append(out, fmt.Sprintf("%s: unknown fields", r.Descriptor().FullName()))
		}
		allowed, checked := published[r.Descriptor().FullName()]
		r.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
			if checked && !slices.Contains(allowed, fd.Number()) {
				out = append(out, fmt.Sprintf("%s.%s=%d", r.Descriptor().FullName(), fd.Name(), fd.Number()))
			}
			if fd.Kind() == protoreflect.MessageKind && !fd.IsList() && !fd.IsMap() {
				walk(v.Message())
			}
			return true
		})
	}
	walk(back.ProtoReflect())
	return out
}

// The simulator's defaults answer as the published engines do: a vLLM GetServerInfo without
// fields 11-17, no media_identity, delta completion_tokens on every streamed message (vLLM
// streams with output_kind=DELTA), FlushCache UNIMPLEMENTED; nothing the stubs do not know.
func TestDefaultsSendNothingARealEngineWouldNot(t *testing.T) {
	p := start(t, grpcsim.Config{Engine: grpcsim.EngineVLLM, Role: grpcsim.RolePrefill, PairingProtocol: "kv-v1"})
	d := start(t, grpcsim.Config{Engine: grpcsim.EngineVLLM, Role: grpcsim.RoleDecode, PairingProtocol: "kv-v1"})
	ctx := ctxT(t, 10*time.Second)
	for _, s := range []*grpcsim.Server{p, d} {
		c := vllmpb.NewVllmEngineClient(dial(t, s))
		info, err := c.GetServerInfo(ctx, &vllmpb.GetServerInfoRequest{})
		require.NoError(t, err)
		assert.Empty(t, extraFields(t, info), "GetServerInfo")
		mi, err := c.GetModelInfo(ctx, &vllmpb.GetModelInfoRequest{})
		require.NoError(t, err)
		assert.Empty(t, extraFields(t, mi), "GetModelInfo")
		_, err = c.FlushCache(ctx, &commonpb.FlushCacheRequest{})
		assert.Equal(t, codes.Unimplemented, status.Code(err), "vLLM has no FlushCache: %v", err)
	}

	// A NIXL handoff, then the decode leg streamed.
	pc, dc := vllmpb.NewVllmEngineClient(dial(t, p)), vllmpb.NewVllmEngineClient(dial(t, d))
	pr := vGenerate(ctx, pc, vReq("f1", prompt(40), 1, map[string]any{"do_remote_decode": true}))
	require.NoError(t, pr.err)
	require.NotNil(t, pr.complete)
	assert.Empty(t, extraFields(t, pr.complete), "prefill complete")
	require.NotNil(t, pr.complete.KvTransferParamsJson)
	req := vReq("f1", prompt(40), 6, nil)
	req.KvTransferParamsJson = pr.complete.KvTransferParamsJson
	req.Stream = true
	dr := vGenerate(ctx, dc, req)
	require.NoError(t, dr.err)
	require.Len(t, dr.chunks, 6)
	for i, ch := range dr.chunks {
		assert.Empty(t, extraFields(t, ch), "chunk %d", i)
		assert.Equal(t, uint32(len(ch.GetTokenIds())), ch.GetCompletionTokens(), "chunk %d: delta completion_tokens", i)
	}
	require.NotNil(t, dr.complete)
	assert.Empty(t, extraFields(t, dr.complete), "decode complete")
	assert.Equal(t, uint32(len(dr.complete.GetOutputIds())), dr.complete.GetCompletionTokens(), "a streamed complete counts its own delta")

	// Not streamed: one complete with every token and the total.
	nr := vGenerate(ctx, dc, vReq("f2", prompt(8), 5, nil))
	require.NoError(t, nr.err)
	assert.Equal(t, uint32(5), nr.complete.GetCompletionTokens())
	assert.Len(t, nr.complete.GetOutputIds(), 5)
}

// The v1.11-era vLLM servicer (VLLMServicer111) reports fields 11-17.
func TestVLLMServicer111ReportsFields11To17(t *testing.T) {
	s := start(t, grpcsim.Config{Engine: grpcsim.EngineVLLM, Role: grpcsim.RoleDecode, VLLMServicer: grpcsim.VLLMServicer111,
		PairingProtocol: " kv-v1 ", KVCacheDtype: "fp8"})
	info, err := vllmpb.NewVllmEngineClient(dial(t, s)).GetServerInfo(ctxT(t, 5*time.Second), &vllmpb.GetServerInfoRequest{})
	require.NoError(t, err)
	assert.Equal(t, []string{"fp8", "FLASH_ATTN", "torch.bfloat16", "kv-v1", "inprocess"},
		[]string{info.GetKvCacheDtype(), info.GetAttentionBackend(), info.GetModelDtype(), info.GetPairingProtocol(), info.GetMmProcessor()})
	assert.EqualValues(t, 16, info.GetBlockSize())
	assert.NotEmpty(t, info.GetMmMediaRefSchemes())
	assert.NotEmpty(t, extraFields(t, info), "the check sees the newer fields")

	_, err = grpcsim.Start(grpcsim.Config{Engine: grpcsim.EngineVLLM, Role: grpcsim.RoleDecode, VLLMServicer: "2.0"})
	assert.ErrorContains(t, err, "vllm servicer")
}

// SGLang's servicer never reads GenerateRequest.data_parallel_rank: a pinned leg lands on
// the rank the engine chose (DPRank), unless SGLangDPRankPin simulates a servicer that does.
func TestSGLangIgnoresDataParallelRank(t *testing.T) {
	for _, pin := range []bool{false, true} {
		t.Run(fmt.Sprintf("pin=%v", pin), func(t *testing.T) {
			s := start(t, grpcsim.Config{Engine: grpcsim.EngineSGLang, Role: grpcsim.RoleDecode, DPSize: 2, DPRank: 1, SGLangDPRankPin: pin})
			c := sglangpb.NewSglangSchedulerClient(dial(t, s))
			st, err := c.Generate(ctxT(t, 5*time.Second), &sglangpb.GenerateRequest{RequestId: "dp", DataParallelRank: 0,
				Tokenized:      &sglangpb.TokenizedInput{InputIds: prompt(4)},
				SamplingParams: &sglangpb.SamplingParams{MaxNewTokens: u32(1)}})
			require.NoError(t, err)
			for {
				if _, err := st.Recv(); err != nil {
					break
				}
			}
			want := map[string]int64{"1": 1}
			if pin {
				want = map[string]int64{"0": 1}
			}
			assert.Equal(t, want, httpStats(t, s).DPRankRequests)
		})
	}
}
