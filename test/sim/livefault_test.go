package sim_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/domain/wire"
	"github.com/smg-go/smg/test/sim"
)

// POST /sim/fault?kind=hang wedges a running instance while /health stays OK; DELETE
// /sim/fault returns it; a bad kind is a 400.
func TestRuntimeFaultWedgesAndReturns(t *testing.T) {
	t.Parallel()
	d := start(t, cfgOf(sim.EngineVLLM, sim.RoleDecode))
	body := map[string]any{"prompt": "wedge me", "max_tokens": 2}
	require.Equal(t, http.StatusOK, post(d.URL()+"/v1/completions", body).status)

	require.Equal(t, http.StatusNoContent, post(d.URL()+"/sim/fault?kind=hang", nil).status)
	assert.Equal(t, http.StatusOK, get(d.URL()+"/health").status, "/health stays OK")
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	r := do(ctx, http.MethodPost, d.URL()+"/v1/completions", body)
	require.Error(t, r.err, "a wedged instance answers nothing")
	eventually(t, func() bool { return d.Stats().Aborted == 1 }, "the abandoned request counts as aborted")

	require.Equal(t, http.StatusNoContent, do(context.Background(), http.MethodDelete, d.URL()+"/sim/fault", nil).status)
	assert.Equal(t, http.StatusOK, post(d.URL()+"/v1/completions", body).status)
	assert.Equal(t, http.StatusBadRequest, post(d.URL()+"/sim/fault?kind=bogus", nil).status)
}

// A canary (request id smg-canary-…) counts in canary_requests; an SGLang leg naming the
// fake bootstrap host 2.2.2.2 is answered alone, prefill and decode, without a handoff.
func TestCanaryCountedAndFakeBootstrapAnsweredLocally(t *testing.T) {
	t.Parallel()
	for _, role := range []string{sim.RolePrefill, sim.RoleDecode} {
		s := start(t, cfgOf(sim.EngineSGLang, role))
		b := map[string]any{"text": "ping", "rid": wire.CanaryRequestIDPrefix + "1", "sampling_params": map[string]any{"max_new_tokens": 1},
			wire.FieldBootstrapHost: wire.FakeBootstrapHost, wire.FieldBootstrapRoom: 7}
		r := post(s.URL()+"/generate", b)
		require.Equal(t, http.StatusOK, r.status, "%s: %s", role, r.body)
		r = post(s.URL()+"/generate", map[string]any{"text": "client", "sampling_params": map[string]any{"max_new_tokens": 1},
			wire.FieldBootstrapHost: wire.FakeBootstrapHost, wire.FieldBootstrapRoom: 8}, wire.HeaderRequestID, "client-1")
		require.Equal(t, http.StatusOK, r.status, "%s: %s", role, r.body)
		st := s.Stats()
		assert.Equal(t, []int64{2, 1, 0, 0, 0}, []int64{st.Requests, st.CanaryRequests, st.HandoffsSent + st.HandoffsReceived, st.UnmatchedRooms, st.RecomputedPrompts}, role)
	}
	v := start(t, cfgOf(sim.EngineVLLM, sim.RoleDecode))
	r := post(v.URL()+"/v1/completions", map[string]any{"prompt": "ping", "max_tokens": 1}, wire.HeaderRequestID, wire.CanaryRequestIDPrefix+"2")
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	assert.Equal(t, []int64{1, 0}, []int64{v.Stats().CanaryRequests, v.Stats().RecomputedPrompts}, "a vLLM canary is no recompute fallback")
}
