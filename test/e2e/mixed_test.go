package e2e_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/test/fleet"
	"github.com/smg-go/smg/test/sim"
)

// Issue #5 item 8: the runtime decides the path per pair. One gateway serves a SGLang pair
// (parallel dispatch, bootstrap room) and a vLLM NIXL pair (sequential dispatch,
// kv_transfer_params); round_robin alternates between the prefills, pairing never mixes
// runtimes, and every request is a real handoff on its own engine.
func TestSGLangAndVLLMPairsInOneGateway(t *testing.T) {
	t.Parallel()
	sp := fleet.StartSim(t, sim.Config{Engine: sim.EngineSGLang, Role: sim.RolePrefill})
	sd := fleet.StartSim(t, sim.Config{Engine: sim.EngineSGLang, Role: sim.RoleDecode})
	vp := fleet.StartSim(t, sim.Config{Engine: sim.EngineVLLM, Role: sim.RolePrefill})
	vd := fleet.StartSim(t, sim.Config{Engine: sim.EngineVLLM, Role: sim.RoleDecode})
	g := fleet.StartGateway(t, fleet.DefaultConfig())
	for _, s := range []*sim.Server{sp, sd, vp, vd} {
		g.Register(t, fleet.WorkerSpec(s))
	}
	g.WaitWorkers(t, 4)

	const n = 8
	for i := 0; i < n; i++ {
		stream := i%4 >= 2
		a := apiChat
		if i%8 >= 4 {
			a = apiCompletions
		}
		prompt := "mixed fleet prompt"
		want := sim.HandoffText(a.simPrompt(prompt), 3)
		if stream {
			r := g.Stream(t, a.path, a.body(prompt, 3, true))
			require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
			assert.Empty(t, r.Errors(), "%s", r.Body)
			assert.Equal(t, want, a.streamText(t, r.Events))
		} else {
			r := g.Post(t, a.path, a.body(prompt, 3, false), nil)
			require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
			assert.Equal(t, want, a.text(t, r.Object(t)))
		}
	}
	waitIdle(t, sp, sd, vp, vd)
	assert.Equal(t, int64(n/2), sd.Stats().HandoffsReceived, "SGLang pair: bootstrap rooms")
	assert.Equal(t, int64(n/2), vd.Stats().HandoffsReceived, "vLLM pair: kv_transfer_params")
	assert.Zero(t, vd.Stats().RecomputedPrompts)
	for _, s := range []*sim.Server{sp, sd, vp, vd} {
		st := s.Stats()
		assert.Equal(t, int64(n/2), st.Requests, "%s %s", s.Config().Engine, s.Config().Role)
		assert.Zero(t, st.Errors+st.UnmatchedRooms+st.DuplicateRooms, "%s %s", s.Config().Engine, s.Config().Role)
	}
	m := g.Metrics(t)
	assert.Equal(t, float64(n/2), m.Sum("smg_pd_kv_connector_mode_total", "mode", "nixl"), "only vLLM dispatches count a connector mode")
	assert.Equal(t, float64(n/2), m.Sum("smg_pd_ttft_seconds_count", "runtime", "sglang"))
	assert.Equal(t, float64(n/2), m.Sum("smg_pd_ttft_seconds_count", "runtime", "vllm"))
	assert.False(t, m.Has("smg_pd_kv_transfer_duration_seconds_count"), "HTTP pairs never observe the KV transfer duration: the series is absent, not 0")
}
