package grpcsim_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	vllmpb "github.com/smg-go/smg/adapters/engine/grpcengine/pb/vllm"
	"github.com/smg-go/smg/test/sim/grpcsim"
)

// A vLLM decode with the no-kv-params fault drops the handoff it is given: it pulls
// nothing (the prefill's blocks stay pending), recomputes the prompt (counted) and reports
// no cached tokens.
func TestVLLMDecodeWithNoKVParamsDropsTheHandoff(t *testing.T) {
	t.Parallel()
	p := start(t, grpcsim.Config{Engine: grpcsim.EngineVLLM, Role: grpcsim.RolePrefill, EngineID: "pe"})
	d := start(t, grpcsim.Config{Engine: grpcsim.EngineVLLM, Role: grpcsim.RoleDecode, Faults: []string{grpcsim.FaultNoKVParams}})
	pc, dc := vllmpb.NewVllmEngineClient(dial(t, p)), vllmpb.NewVllmEngineClient(dial(t, d))
	ids := prompt(40)
	ctx := ctxT(t, 10*time.Second)
	pr := vGenerate(ctx, pc, vReq("v1", ids, 1, map[string]any{"do_remote_decode": true, "do_remote_prefill": false}))
	require.NoError(t, pr.err)
	var params map[string]any
	require.NoError(t, json.Unmarshal([]byte(pr.complete.GetKvTransferParamsJson()), &params))

	dr := vGenerate(ctx, dc, vReq("v1", ids, 2, params))
	require.NoError(t, dr.err)
	assert.Equal(t, grpcsim.RecomputeTokens(ids, 2), dr.complete.GetOutputIds())
	assert.Zero(t, dr.complete.GetCachedTokens(), "nothing came through the handoff")
	assert.Equal(t, int64(1), d.Stats().RecomputedPrompts)
	assert.Zero(t, d.Stats().HandoffsReceived)
}
