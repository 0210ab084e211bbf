package grpcfleet_test

import (
	"net/http"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/fx"

	"github.com/smg-go/smg/app/config"
	"github.com/smg-go/smg/domain/text"
	"github.com/smg-go/smg/test/fleet"
	"github.com/smg-go/smg/test/sim/grpcsim"
)

// knobs reads a recorded Sampling as plain values (nil fields as -1).
func knobs(s grpcsim.Sampling) (temp float32, topK int32) {
	temp, topK = -1, -1
	if s.Temperature != nil {
		temp = *s.Temperature
	}
	if s.TopK != nil {
		topK = *s.TopK
	}
	return temp, topK
}

// The decode worker's default_sampling_params_json (GetModelInfo) fills the knobs a client
// omitted, on both legs; a retry on another decode re-runs every stage and takes the new
// decode's defaults, not the failed one's (grpc.md §1.7 restamp_plan_for_attempt). A knob
// the client set wins over every default.
func TestGRPCRetryAppliesTheNewDecodesSamplingDefaults(t *testing.T) {
	t.Parallel()
	m, dir := qwen3(t)
	mk := func(role, defaults string, faults ...string) grpcsim.Config {
		return grpcsim.Config{Engine: grpcsim.EngineSGLang, Role: role, Model: pdModel, TokenizerPath: dir,
			DefaultSamplingParams: defaults, Faults: faults}
	}
	s := sims(t, mk(grpcsim.RolePrefill, `{"temperature":0.1,"top_k":1}`),
		mk(grpcsim.RoleDecode, `{"temperature":0.3,"top_k":3}`, "status:503"),
		mk(grpcsim.RoleDecode, `{"temperature":0.7,"top_k":5}`))
	p, bad, good := s[0], s[1], s[2]
	cfg := fleet.DefaultConfig()
	cfg.Prefill = []config.PrefillSpec{{URL: p.URL(), BootstrapPort: port(p.BootstrapPort())}}
	cfg.Decode = []string{bad.URL(), good.URL()}
	cfg.DecodePolicy = "round_robin"
	cfg.RetryInitialBackoffMS, cfg.RetryMaxBackoffMS = 1, 5
	g := fleet.StartGateway(t, cfg, fx.Decorate(func(r *text.Registry) *text.Registry { r.Put(pdModel, m); return r }))
	g.WaitWorkers(t, 3)

	const n = 4
	for i := 0; i < n; i++ {
		body := map[string]any{"model": pdModel, "prompt": "defaults " + strconv.Itoa(i), "max_tokens": 2}
		if i == n-1 {
			body["temperature"] = 0.25 // the client's knob wins; top_k still defaults
		}
		r := g.Post(t, "/v1/completions", body, nil)
		require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
	}
	badSeen, goodSeen := bad.Samplings(), good.Samplings()
	require.NotEmpty(t, badSeen, "round robin sent a first attempt to the failing decode")
	require.Len(t, goodSeen, n, "every request ended on the healthy decode")
	for _, x := range badSeen {
		temp, k := knobs(x)
		if temp != 0.25 {
			assert.InDelta(t, 0.3, temp, 1e-6, "the failing decode got its own defaults")
		}
		assert.EqualValues(t, 3, k)
	}
	for i, x := range goodSeen {
		temp, k := knobs(x)
		wantTemp := float32(0.7)
		if i == n-1 {
			wantTemp = 0.25
		}
		assert.InDelta(t, wantTemp, temp, 1e-6, "request %d: the retry took the new decode's defaults", i)
		assert.EqualValues(t, 5, k, "request %d", i)
	}
	// The prefill leg carries the same knobs as its decode on every attempt (never its own
	// defaults): one attempt per decode leg.
	ps := p.Samplings()
	require.Len(t, ps, len(badSeen)+len(goodSeen))
	byID := map[string]grpcsim.Sampling{}
	for _, x := range append(badSeen, goodSeen...) {
		byID[x.RequestID] = x
	}
	for _, x := range ps {
		d, ok := byID[x.RequestID]
		require.True(t, ok, "prefill request %s has a decode twin", x.RequestID)
		pt, pk := knobs(x)
		dt, dk := knobs(d)
		assert.Equal(t, dt, pt, x.RequestID)
		assert.Equal(t, dk, pk, x.RequestID)
	}
	assert.EqualValues(t, n, good.Stats().HandoffsReceived)
	assert.Zero(t, good.Stats().RecomputedPrompts)
}
