package resilience_test

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/app/config"
	"github.com/smg-go/smg/domain/wire"
	"github.com/smg-go/smg/test/fleet"
	"github.com/smg-go/smg/test/sim"
)

// DELETE /workers/{id} while a stream runs on that decode: the in-flight stream finishes
// with every token, the worker drains and is removed (its breaker series go with it), and
// every new request picks the other decode.
func TestWorkerRemovedMidRequest(t *testing.T) {
	t.Parallel()
	f := fleet.Start(t, fleet.Spec{Engine: sim.EngineSGLang, Prefills: 1, Decodes: 2,
		Gateway: func(c *config.Config) { c.DrainSettle = 200 * time.Millisecond },
		Sim: func(role string, _ int, c *sim.Config) {
			if role == sim.RoleDecode {
				c.ITL = 20 * time.Millisecond
			}
		}})
	g := f.Gateway
	const n = 50 // ~1 s of output, longer than the drain settle time
	resp := g.Open(t, context.Background(), "/v1/chat/completions", chat("removed mid-request", n, true))
	require.Equal(t, http.StatusOK, resp.StatusCode)
	victim := routedURL(t, g, resp.Header)
	rd := bufio.NewReader(resp.Body)
	first, err := rd.ReadString('\n')
	require.NoError(t, err)

	del, err := http.NewRequest(http.MethodDelete, g.URL+"/workers/"+workerID(t, g, victim), nil)
	require.NoError(t, err)
	dr, err := g.Do(del)
	require.NoError(t, err)
	require.Equal(t, http.StatusAccepted, dr.Status, "%s", dr.Body)

	require.Eventually(t, func() bool {
		for _, w := range g.Workers(t) {
			if w.URL == victim {
				return false
			}
		}
		return true
	}, bound, 10*time.Millisecond, "the drained worker is removed")
	state, _, _ := cb(t, g, victim)
	assert.Equal(t, float64(-1), state, "a removed worker's breaker series are deleted")

	rest, err := io.ReadAll(rd)
	require.NoError(t, err)
	events := fleet.ParseEvents(t, append([]byte(first), rest...))
	require.NotEmpty(t, events)
	assert.True(t, events[len(events)-1].Done(), "the in-flight stream finished")
	assert.Equal(t, chatText("removed mid-request", n), chatStreamText(t, events))

	var gone, other *sim.Server
	for _, d := range f.Decodes {
		if d.URL() == victim {
			gone = d
		} else {
			other = d
		}
	}
	require.NotNil(t, gone)
	before := gone.Stats().Requests
	for i := range 6 {
		r := g.Post(t, "/v1/chat/completions", chat("after the removal", 2, false), nil)
		require.Equal(t, http.StatusOK, r.Status, "request %d: %s", i, r.Body)
		assert.Equal(t, workerID(t, g, other.URL()), r.Header.Get(wire.HeaderRoutedWorker))
	}
	assert.Equal(t, before, gone.Stats().Requests, "no new pick reached the removed decode")
	st := gone.Stats()
	assert.Equal(t, []int64{1, 0, 0, n}, []int64{st.Requests, st.Aborted, st.Errors, st.GenerationTokens})
}

// A failing health check takes a decode out of rotation while a stream on it runs: once
// --health-failure-threshold probes failed the worker is not_ready, new requests go to the
// other decode, and the in-flight stream still finishes with every token.
func TestFailingHealthCheckStopsNewPicks(t *testing.T) {
	t.Parallel()
	pre := fleet.StartSim(t, sim.Config{Engine: sim.EngineSGLang, Role: sim.RolePrefill})
	slow := fleet.StartSim(t, sim.Config{Engine: sim.EngineSGLang, Role: sim.RoleDecode, ITL: 20 * time.Millisecond})
	other := fleet.StartSim(t, sim.Config{Engine: sim.EngineSGLang, Role: sim.RoleDecode})
	g := fleet.StartGateway(t, fleet.DefaultConfig())
	sick := newLegProxy(t, slow.URL())
	g.Register(t, fleet.WorkerSpec(pre))
	spec := fleet.WorkerSpec(slow)
	spec["url"] = sick.URL
	g.Register(t, spec)
	g.WaitWorkers(t, 2)
	g.Register(t, fleet.WorkerSpec(other)) // registered last: the first pick is the proxied decode
	g.WaitWorkers(t, 3)

	const n = 60 // ~1.2 s of output: longer than three failed probes 200 ms apart
	resp := g.Open(t, context.Background(), "/v1/chat/completions", chat("health fails mid-request", n, true))
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, sick.URL, routedURL(t, g, resp.Header))
	rd := bufio.NewReader(resp.Body)
	first, err := rd.ReadString('\n')
	require.NoError(t, err)
	sick.Sick.Store(true)

	require.Eventually(t, func() bool {
		for _, w := range g.Workers(t) {
			if w.URL == sick.URL {
				return !w.IsHealthy
			}
		}
		return false
	}, bound, 20*time.Millisecond, "the decode fails its health checks")
	before := slow.Stats().Requests
	for i := range 4 {
		r := g.Post(t, "/v1/chat/completions", chat("while it is sick", 2, false), nil)
		require.Equal(t, http.StatusOK, r.Status, "request %d: %s", i, r.Body)
		assert.Equal(t, workerID(t, g, other.URL()), r.Header.Get(wire.HeaderRoutedWorker))
	}
	assert.Equal(t, before, slow.Stats().Requests, "no new pick reached the unhealthy decode")

	rest, err := io.ReadAll(rd)
	require.NoError(t, err)
	events := fleet.ParseEvents(t, append([]byte(first), rest...))
	require.NotEmpty(t, events)
	assert.True(t, events[len(events)-1].Done(), "the in-flight stream finished")
	assert.Equal(t, chatText("health fails mid-request", n), chatStreamText(t, events))
	st := slow.Stats()
	assert.Equal(t, []int64{1, 0, 0}, []int64{st.Requests, st.Aborted, st.Errors})
}
