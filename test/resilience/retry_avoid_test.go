package resilience_test

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/app/config"
	"github.com/smg-go/smg/domain/wire"
	"github.com/smg-go/smg/test/fleet"
	"github.com/smg-go/smg/test/sim"
)

// A decode dies while health checks have not noticed yet, under a prefix-affine decode
// policy (cache_aware) that keeps choosing it: the retry re-selects both legs and avoids the
// worker that just failed, so the client gets 200 from the surviving decode instead of a
// 502 after every attempt went to the dead one (found by a fresh-user run).
func TestRetryAvoidsTheDecodeThatJustFailed(t *testing.T) {
	t.Parallel()
	f := fleet.Start(t, fleet.Spec{Engine: sim.EngineVLLM, Prefills: 1, Decodes: 2,
		Gateway: func(c *config.Config) {
			c.DecodePolicy = "cache_aware"
			c.HealthCheckInterval = 3600e9 // health checks will not notice the dead decode
		}})
	g := f.Gateway
	prompt := "a sticky prompt that cache_aware keeps on one decode worker"
	r := g.Post(t, "/v1/chat/completions", chat(prompt, 4, false), nil)
	require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
	victim := routedURL(t, g, r.Header)
	var dead, alive *sim.Server
	for _, d := range f.Decodes {
		if d.URL() == victim {
			dead = d
		} else {
			alive = d
		}
	}
	require.NotNil(t, dead, "routed to %s", victim)
	require.NoError(t, dead.Close())

	before := alive.Stats().HandoffsReceived
	for i := range 4 {
		r := g.Post(t, "/v1/chat/completions", chat(prompt, 4, false), nil)
		require.Equal(t, http.StatusOK, r.Status, "request %d: %s", i, r.Body)
		assert.Equal(t, workerID(t, g, alive.URL()), r.Header.Get(wire.HeaderRoutedWorker), fmt.Sprint("request ", i))
		assert.Contains(t, string(r.Body), chatText(prompt, 4), "a real handoff on the surviving decode")
	}
	assert.Equal(t, before+4, alive.Stats().HandoffsReceived)
}
