package resilience_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/test/fleet"
	"github.com/smg-go/smg/test/sim"
)

// An HTTP vLLM Mooncake prefill restarted on its URL with a new engine id: over HTTP the
// gateway mints handoffs from the registered kv_engine_id and reads none from the engine,
// so the decode refuses every one (500 naming remote_engine_id). The stale fact is the
// prefill's: the client gets 502 prefill_kv_transfer_failed telling to re-register, the
// prefill's breaker counts it once per request, and the decode's breaker never moves.
// Re-registering the prefill with its new kv_engine_id serves again.
func TestRestartedHTTPMooncakePrefillIsCharged(t *testing.T) {
	t.Parallel()
	f := fleet.Start(t, fleet.Spec{Engine: sim.EngineVLLM, Connector: sim.ConnectorMooncake, Prefills: 1, Decodes: 1})
	g, pre, dec := f.Gateway, f.Prefills[0], f.Decodes[0]
	require.Equal(t, http.StatusOK, g.Post(t, "/v1/chat/completions", chat("before", 4, false), nil).Status)

	pc := pre.Config()
	pc.Port, pc.BootstrapPort, pc.EngineID = pre.Port(), pre.BootstrapPort(), "prefill-after"
	require.NoError(t, pre.Close())
	np := fleet.StartSim(t, pc)

	for range 2 {
		r := g.Post(t, "/v1/chat/completions", chat("after", 4, false), nil)
		assert.Less(t, r.Elapsed, bound, "hang guard")
		msg := requireError(t, r, http.StatusBadGateway, "prefill_kv_transfer_failed")
		assert.Contains(t, msg, "re-register")
		assert.Contains(t, msg, "remote_engine_id")
	}
	waitIdle(t, np, dec)
	assert.Equal(t, int64(4), np.Stats().Requests, "two attempts per request: the repeat ends it")
	_, _, pfail := cb(t, g, np.URL())
	assert.Equal(t, float64(2), pfail, "the prefill, once per request")
	dstate, _, dfail := cb(t, g, dec.URL())
	assert.Equal(t, []float64{0, 0}, []float64{dstate, dfail}, "the decode's breaker never moved")
	assert.Empty(t, g.Metrics(t).Find("smg_worker_cb_transitions_total", "worker", dec.URL()))

	// Re-registered with the new engine id: served again.
	var id string
	for _, w := range g.Workers(t) {
		if w.URL == np.URL() {
			id = w.ID
		}
	}
	require.NotEmpty(t, id)
	req := g.NewRequest(t, context.Background(), "/workers/"+id, nil, nil)
	req.Method = http.MethodDelete
	del, err := g.Do(req)
	require.NoError(t, err)
	require.Less(t, del.Status, 300, "%s", del.Body)
	g.WaitUntil(t, "the prefill is gone", func(ws []fleet.WorkerInfo) bool { return len(ws) == 1 })
	g.Register(t, fleet.WorkerSpec(np))
	g.WaitWorkers(t, 2)
	r := g.Post(t, "/v1/chat/completions", chat("re-registered", 4, false), nil)
	require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
	assert.Equal(t, chatText("re-registered", 4), r.Object(t)["choices"].([]any)[0].(map[string]any)["message"].(map[string]any)["content"])
}
