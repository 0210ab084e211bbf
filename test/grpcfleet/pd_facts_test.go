package grpcfleet_test

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/app/config"
	"github.com/smg-go/smg/test/fleet"
	"github.com/smg-go/smg/test/sim/grpcsim"
)

// A vLLM Mooncake prefill restarted on its URL (and bootstrap port) with a new engine id,
// faster than any health probe notices (the interval is 10 min here): the first handoff
// minted with the stale id is refused by the decode (409 naming remote_engine_id), which
// charges the prefill, re-reads its engine id and retries: every request gets 200,
// /workers shows the new id, and the decode's breaker never moved.
func TestRestartedMooncakePrefillWithANewEngineID(t *testing.T) {
	t.Parallel()
	mk := func(role string, c *grpcsim.Config) {
		c.KVConnector = grpcsim.ConnectorMooncake
		c.EngineID = role + "-before"
	}
	g, p, d := pdFleet(t, grpcsim.EngineVLLM, mk, func(c *config.Config) { c.HealthCheckInterval = 10 * time.Minute })
	ask := func(q string) *fleet.Response {
		return g.Post(t, "/v1/chat/completions", map[string]any{"model": pdModel,
			"messages": []map[string]string{{"role": "user", "content": q}}, "max_tokens": 4}, nil)
	}
	require.Equal(t, http.StatusOK, ask("before the restart").Status)

	pc := p.Config()
	pc.Port, pc.BootstrapPort, pc.EngineID = p.Port(), p.BootstrapPort(), "prefill-after"
	require.NoError(t, p.Close())
	np := sims(t, pc)[0]

	failed := 0
	for i := range 6 {
		r := ask("after the restart")
		assert.Less(t, r.Elapsed, 10*time.Second, "hang guard")
		if r.Status != http.StatusOK {
			failed++
			t.Logf("request %d: %d %s", i, r.Status, r.Body)
		}
	}
	assert.LessOrEqual(t, failed, 1, "at most one failed request")
	assert.GreaterOrEqual(t, np.Stats().Requests, int64(5), "the restarted prefill serves")

	var l struct {
		Workers []workerView `json:"workers"`
	}
	require.NoError(t, json.Unmarshal(g.Get(t, "/workers").Body, &l))
	var id string
	for _, w := range l.Workers {
		if w.URL == np.URL() {
			id = w.KVEngineID
		}
	}
	assert.Equal(t, "prefill-after", id, "/workers shows the new engine id")
	m := g.Metrics(t)
	assert.Zero(t, m.Sum("smg_worker_cb_outcomes_total", "worker", d.URL(), "outcome", "failure"), "the decode was never charged")
	assert.Empty(t, m.Find("smg_worker_cb_transitions_total", "worker", d.URL()), "the decode's breaker did not move")
}

// A gRPC decode restarted on its URL with another context length: the health probe
// re-reads its server and model info, /workers shows the new max_context_length within a
// few health intervals (250 ms here), and the replaced worker serves.
func TestRestartedDecodeWithNewModelFacts(t *testing.T) {
	t.Parallel()
	g, _, d := pdFleet(t, grpcsim.EngineVLLM, func(role string, c *grpcsim.Config) {
		c.KVConnector = grpcsim.ConnectorNixl
		c.MaxModelLen = 4096
	}, nil)
	view := func() workerView {
		var l struct {
			Workers []workerView `json:"workers"`
		}
		require.NoError(t, json.Unmarshal(g.Get(t, "/workers").Body, &l))
		for _, w := range l.Workers {
			if w.URL == d.URL() {
				return w
			}
		}
		return workerView{}
	}
	require.Equal(t, "4096", view().Labels["max_context_length"])

	dc := d.Config()
	dc.Port, dc.MaxModelLen = d.Port(), 8192
	require.NoError(t, d.Close())
	sims(t, dc)
	require.Eventually(t, func() bool { return view().Labels["max_context_length"] == "8192" }, fleet.ReadyTimeout, 20*time.Millisecond,
		"/workers shows the new context length")
	var ready bool
	require.Eventually(t, func() bool {
		for _, w := range g.Workers(t) {
			ready = ready || w.URL == d.URL() && w.Status == "ready"
		}
		return ready
	}, fleet.ReadyTimeout, 20*time.Millisecond)
	r := g.Post(t, "/v1/chat/completions", map[string]any{"model": pdModel,
		"messages": []map[string]string{{"role": "user", "content": "after the decode restart"}}, "max_tokens": 4}, nil)
	assert.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
}
