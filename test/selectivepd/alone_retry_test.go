package selectivepd_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/test/fleet"
	"github.com/smg-go/smg/test/sim"
)

// A request served alone on a worker that fails is retried through a new pair, not sent
// back to that worker (the seed: a retry goes to a new pair): with the only kv_both prefill
// answering 503, a prefill-only request's retry goes to the other prefill and the
// decode, and the failed worker sees one attempt.
func TestAloneRequestRetriesThroughANewPair(t *testing.T) {
	t.Parallel()
	g := prefillOnlyGateway(t, 4)
	both := fleet.StartSim(t, sim.Config{Engine: sim.EngineVLLM, Role: sim.RolePrefill, KVConnector: sim.ConnectorNixl})
	prod := fleet.StartSim(t, sim.Config{Engine: sim.EngineVLLM, Role: sim.RolePrefill, KVConnector: sim.ConnectorNixl})
	dec := fleet.StartSim(t, sim.Config{Engine: sim.EngineVLLM, Role: sim.RoleDecode, KVConnector: sim.ConnectorNixl})
	register(t, g, both, map[string]any{"kv_role": "kv_both"})
	register(t, g, prod, map[string]any{"kv_role": "kv_producer"})
	register(t, g, dec, nil)
	g.WaitWorkersHealthy(t, 3)
	require.NoError(t, both.SetFault(sim.FaultStatus+":503"))

	post(t, g, withMax(100, 2, false))
	assert.Equal(t, int64(1), both.Stats().Errors, "one attempt on the failing lone worker")
	assert.Equal(t, int64(1), prod.Stats().Requests, "the retry's prefill leg")
	assert.Equal(t, int64(1), dec.Stats().HandoffsReceived, "the retry went through the pair")
	assert.Equal(t, 1.0, g.Metrics(t).Sum(decisions, "decision", "prefill_only"), "one prefill-only attempt")
}
