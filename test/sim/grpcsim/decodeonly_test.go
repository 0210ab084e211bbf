package grpcsim_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	sglangpb "github.com/smg-go/smg/adapters/engine/grpcengine/pb/sglang"
	tokenspeedpb "github.com/smg-go/smg/adapters/engine/grpcengine/pb/tokenspeed"
	vllmpb "github.com/smg-go/smg/adapters/engine/grpcengine/pb/vllm"
	"github.com/smg-go/smg/domain/wire"
	"github.com/smg-go/smg/test/sim/grpcsim"
)

// decode_only_requests (prefill_only_requests on a prefill) counts what a decode received without any handoff data (no
// kv_transfer_params on vLLM, no bootstrap room on SGLang and TokenSpeed), served whole
// there; a handed-off leg, a canary and a prefill's request are not counted. The JSON name
// is the HTTP simulator's.
func TestDecodeOnlyRequestsCounted(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t, 10*time.Second)
	ids := prompt(9)
	t.Run("vllm", func(t *testing.T) {
		t.Parallel()
		p := start(t, grpcsim.Config{Engine: grpcsim.EngineVLLM, Role: grpcsim.RolePrefill})
		d := start(t, grpcsim.Config{Engine: grpcsim.EngineVLLM, Role: grpcsim.RoleDecode})
		pc, dc := vllmpb.NewVllmEngineClient(dial(t, p)), vllmpb.NewVllmEngineClient(dial(t, d))
		r := vGenerate(ctx, dc, vReq("alone", ids, 2, nil))
		require.NoError(t, r.err)
		require.NoError(t, vGenerate(ctx, dc, vReq(wire.CanaryRequestIDPrefix+"1", ids, 1, nil)).err)
		pr := vGenerate(ctx, pc, vReq("pd", ids, 1, map[string]any{"do_remote_decode": true, "do_remote_prefill": false}))
		require.NoError(t, pr.err)
		require.NoError(t, vGenerate(ctx, dc, vReq("pd", ids, 2, map[string]any{"do_remote_prefill": false})).err, "params present, incomplete: a recompute, not decode-only")
		st := httpStats(t, d)
		assert.EqualValues(t, 1, st.DecodeOnlyRequests)
		assert.EqualValues(t, 3, st.RecomputedPrompts, "the lone request, the canary and the incomplete params computed the prompt")
		assert.Zero(t, httpStats(t, p).DecodeOnlyRequests, "a prefill never counts")
		assert.Zero(t, httpStats(t, p).PrefillOnlyRequests, "a PD prefill leg carries do_remote_decode")
		assert.Zero(t, st.PrefillOnlyRequests, "a decode never counts prefill-only")
		whole := vGenerate(ctx, pc, vReq("whole", ids, 3, nil))
		require.NoError(t, whole.err)
		assert.EqualValues(t, 3, whole.complete.GetCompletionTokens(), "served whole: every output token, not one")
		assert.EqualValues(t, 1, httpStats(t, p).PrefillOnlyRequests)
	})
	t.Run("sglang", func(t *testing.T) {
		t.Parallel()
		d := start(t, grpcsim.Config{Engine: grpcsim.EngineSGLang, Role: grpcsim.RoleDecode})
		dc := sglangpb.NewSglangSchedulerClient(dial(t, d))
		require.NoError(t, sgGenerate(ctx, dc, sgReq("alone", ids, 2, false, nil)).err)
		fake := &sglangpb.DisaggregatedParams{BootstrapHost: wire.FakeBootstrapHost, BootstrapRoom: 1}
		require.NoError(t, sgGenerate(ctx, dc, sgReq("warm", ids, 1, false, fake)).err)
		assert.EqualValues(t, 1, httpStats(t, d).DecodeOnlyRequests, "the warmup form carries a room")
	})
	t.Run("tokenspeed", func(t *testing.T) {
		t.Parallel()
		d := start(t, grpcsim.Config{Engine: grpcsim.EngineTokenSpeed, Role: grpcsim.RoleDecode})
		dc := tokenspeedpb.NewTokenSpeedSchedulerClient(dial(t, d))
		require.NoError(t, tsGenerate(ctx, dc, tsReq("alone", ids, 2, false, nil)).err)
		st := httpStats(t, d)
		assert.EqualValues(t, 1, st.DecodeOnlyRequests)
		d.Reset()
		assert.Zero(t, httpStats(t, d).DecodeOnlyRequests, "reset")
	})
}
