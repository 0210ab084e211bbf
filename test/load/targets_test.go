package load_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/test/fleet"
	"github.com/smg-go/smg/test/load"
	"github.com/smg-go/smg/test/sim"
)

func workload(stream bool) load.Workload {
	return load.Workload{Prompt: load.BenchPrompt, MaxTokens: load.OutputTokens, Stream: stream}
}

func phase(n int) load.Options {
	return load.Options{Concurrency: 4, Requests: n, Duration: hangGuard}
}

// runBoth runs n non-streaming then n streaming requests through mk's target and checks
// that none failed and that the streams had a first byte and inter-chunk gaps.
func runBoth(t *testing.T, n int, mk func(wl load.Workload) load.Target) {
	t.Helper()
	for _, stream := range []bool{false, true} {
		s, err := load.Run(context.Background(), mk(workload(stream)), phase(n))
		require.NoError(t, err)
		require.Zero(t, s.Errors, "stream=%t: %s", stream, s.FirstError)
		assert.Equal(t, n, s.OK)
		assert.Positive(t, s.TTFT.P50)
		if stream {
			assert.Positive(t, s.Gap.N, "a 16-token stream has gaps between its chunks")
		}
	}
}

func TestDirectSGLangPerformsTheBootstrapHandoff(t *testing.T) {
	t.Parallel()
	p := fleet.StartSim(t, sim.Config{Engine: sim.EngineSGLang, Role: sim.RolePrefill})
	d := fleet.StartSim(t, sim.Config{Engine: sim.EngineSGLang, Role: sim.RoleDecode})
	hc := load.NewClient(4)
	runBoth(t, 20, func(wl load.Workload) load.Target {
		tg, err := load.NewDirectSGLang(p.URL(), "127.0.0.1", p.BootstrapPort(), d.URL(), wl, hc)
		require.NoError(t, err)
		return tg
	})
	ps, ds := p.Stats(), d.Stats()
	assert.EqualValues(t, 40, ds.Requests)
	assert.EqualValues(t, 40, ds.HandoffsReceived, "every decode got its KV through a room")
	assert.EqualValues(t, 40, ps.HandoffsSent)
	assert.Zero(t, ps.DuplicateRooms+ps.Errors+ds.Errors)
}

func TestDirectNIXLPerformsTheSequentialHandoff(t *testing.T) {
	t.Parallel()
	p := fleet.StartSim(t, sim.Config{Engine: sim.EngineVLLM, Role: sim.RolePrefill, KVConnector: sim.ConnectorNixl})
	d := fleet.StartSim(t, sim.Config{Engine: sim.EngineVLLM, Role: sim.RoleDecode, KVConnector: sim.ConnectorNixl})
	hc := load.NewClient(4)
	runBoth(t, 20, func(wl load.Workload) load.Target {
		tg, err := load.NewDirectNIXL(p.URL(), d.URL(), wl, hc)
		require.NoError(t, err)
		return tg
	})
	ps, ds := p.Stats(), d.Stats()
	assert.EqualValues(t, 40, ps.Requests)
	assert.EqualValues(t, 40, ds.HandoffsReceived, "every decode pulled the prefill's blocks")
	assert.Zero(t, ds.RecomputedPrompts)
	assert.EqualValues(t, 40, ps.HandoffsSent)
}

func TestDirectNIXLFailsWithoutKVTransferParams(t *testing.T) {
	t.Parallel()
	p := fleet.StartSim(t, sim.Config{Engine: sim.EngineVLLM, Role: sim.RolePrefill, Faults: []string{sim.FaultNoKVParams}})
	d := fleet.StartSim(t, sim.Config{Engine: sim.EngineVLLM, Role: sim.RoleDecode})
	tg, err := load.NewDirectNIXL(p.URL(), d.URL(), workload(false), load.NewClient(1))
	require.NoError(t, err)
	s, err := load.Run(context.Background(), tg, load.Options{Concurrency: 1, Requests: 3, Duration: hangGuard})
	require.NoError(t, err)
	assert.Equal(t, 3, s.Errors)
	assert.Contains(t, s.FirstError, "kv_transfer_params")
	assert.Zero(t, d.Stats().Requests, "no decode leg without params")
}

func TestGatewayTargetAndComparison(t *testing.T) {
	t.Parallel()
	for _, engine := range []string{sim.EngineSGLang, sim.EngineVLLM} {
		t.Run(engine, func(t *testing.T) {
			t.Parallel()
			f := fleet.Start(t, fleet.Spec{Engine: engine, Prefills: 1, Decodes: 1})
			p, d := f.Prefills[0], f.Decodes[0]
			hc := load.NewClient(4)
			direct := func(wl load.Workload) load.Target {
				var tg load.Target
				var err error
				if engine == sim.EngineSGLang {
					tg, err = load.NewDirectSGLang(p.URL(), "127.0.0.1", p.BootstrapPort(), d.URL(), wl, hc)
				} else {
					tg, err = load.NewDirectNIXL(p.URL(), d.URL(), wl, hc)
				}
				require.NoError(t, err)
				return tg
			}
			c, err := load.Compare(context.Background(), engine, true,
				load.NewGateway(f.Gateway.URL, workload(true), hc), direct(workload(true)),
				load.CompareOptions{Pairs: 2, Phase: phase(10)})
			require.NoError(t, err)
			require.Len(t, c.Pairs, 2)
			assert.Equal(t, 10, c.Pairs[1].A.OK)
			assert.Equal(t, 10, c.Pairs[1].B.OK)
			ds := d.Stats()
			assert.EqualValues(t, 40, ds.Requests, "2 pairs × (10 through the gateway + 10 direct)")
			assert.EqualValues(t, 40, ds.HandoffsReceived)
			assert.Zero(t, ds.RecomputedPrompts)
		})
	}
}

func TestGatewayTargetReportsHTTPErrors(t *testing.T) {
	t.Parallel()
	f := fleet.Start(t, fleet.Spec{Engine: sim.EngineSGLang, Prefills: 1, Decodes: 1})
	wl := workload(false)
	wl.Path = "/v1/no-such-route"
	s, err := load.Run(context.Background(), load.NewGateway(f.Gateway.URL, wl, load.NewClient(1)),
		load.Options{Concurrency: 1, Requests: 2, Duration: hangGuard})
	require.NoError(t, err)
	assert.Equal(t, 2, s.Errors)
	assert.Contains(t, s.FirstError, "HTTP 404")
}

func TestHoldStreamsKeepsEveryStreamOpen(t *testing.T) {
	t.Parallel()
	f := fleet.Start(t, fleet.Spec{Engine: sim.EngineSGLang, Prefills: 1, Decodes: 1,
		Sim: func(role string, _ int, c *sim.Config) {
			c.MaxRunning = 0
			if role == sim.RoleDecode {
				c.ITL = 500 * time.Millisecond
			}
		}})
	h, err := load.HoldStreams(context.Background(), f.Gateway.URL, load.HoldOptions{N: 20, OpenConcurrency: 5,
		Hold: 100 * time.Millisecond, Timeout: hangGuard, Workload: load.Workload{Prompt: load.BenchPrompt, MaxTokens: 100}})
	require.NoError(t, err)
	assert.Equal(t, 20, h.Requested)
	assert.Equal(t, 20, h.Opened)
	assert.Equal(t, 20, h.StillOpen)
	assert.Zero(t, h.Failed, h.FirstError)
	assert.Positive(t, h.Base.RSS)
	assert.Greater(t, h.Held.Goroutines, h.Base.Goroutines, "each open stream holds goroutines")
	_, _, _, g := h.PerStream()
	assert.Positive(t, g)
}

func TestHoldStreamsRefusesRemoteTargets(t *testing.T) {
	t.Parallel()
	_, err := load.HoldStreams(context.Background(), "http://192.0.2.1:8000", load.HoldOptions{N: 1})
	assert.ErrorContains(t, err, "loopback")
}
