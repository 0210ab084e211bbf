package grpcfleet_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/fx"

	"github.com/smg-go/smg/app/config"
	"github.com/smg-go/smg/domain/text"
	"github.com/smg-go/smg/test/fleet"
	"github.com/smg-go/smg/test/sim/grpcsim"
)

const stallPrefix = "You are a careful assistant. Answer briefly, cite nothing, and keep every answer to one line. "

func stallChat(client, i int) []byte {
	b, _ := json.Marshal(map[string]any{"model": pdModel, "max_tokens": 8, "stream": true,
		"messages": []map[string]any{{"role": "system", "content": stallPrefix},
			{"role": "user", "content": fmt.Sprintf("question %d of client %d", i, client)}}})
	return b
}

// One gRPC SGLang decode of two wedges (HealthCheck stays healthy) under 16 streaming
// clients with a shared prefix and cache_aware policies; the 60 s run is 15 s here,
// with --stall-floor-secs 1, --stall-timeout-secs 2 and --canary-timeout-secs 2 so the
// stranded requests stay under 10 % of it. The stranded requests are cut (an Abort RPC each) and retried on the healthy
// decode within the stall bound plus the canary deadline (the share under twice the healthy
// median is logged; the liveness benchmark measures it), the hung decode's breaker opened after a failed canary (its
// canary_requests), the engine's 300 s bootstrap timeout was never the detector, and no
// healthy worker's breaker moved.
func TestGRPCHungDecodeFoundByWatchdog(t *testing.T) {
	t.Parallel()
	m, dir := qwen3(t)
	mk := func(role string) grpcsim.Config {
		return grpcsim.Config{Engine: grpcsim.EngineSGLang, Role: role, Model: pdModel, TokenizerPath: dir, ITL: 50 * time.Millisecond}
	}
	s := sims(t, mk(grpcsim.RolePrefill), mk(grpcsim.RolePrefill), mk(grpcsim.RoleDecode), mk(grpcsim.RoleDecode))
	prefills, decodes := s[:2], s[2:]
	cfg := fleet.DefaultConfig()
	for _, p := range prefills {
		cfg.Prefill = append(cfg.Prefill, config.PrefillSpec{URL: p.URL(), BootstrapPort: port(p.BootstrapPort())})
	}
	for _, d := range decodes {
		cfg.Decode = append(cfg.Decode, d.URL())
	}
	cfg.Policy, cfg.PrefillPolicy, cfg.DecodePolicy = "cache_aware", "cache_aware", "cache_aware"
	cfg.StallFloor, cfg.StallTimeout, cfg.CanaryTimeout = time.Second, 2*time.Second, 2*time.Second
	g := fleet.StartGateway(t, cfg, fx.Decorate(func(r *text.Registry) *text.Registry { r.Put(pdModel, m); return r }))
	g.WaitWorkers(t, 4)

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const path = "/v1/chat/completions"
	warm := g.Load(ctx, 16, 2*time.Second, path, stallChat)
	for _, sh := range warm {
		require.Equal(t, http.StatusOK, sh.Status, "warm-up: %v %s", sh.Err, sh.Body)
	}
	healthy := fleet.Median(warm)
	hung, other := decodes[0], decodes[1]
	if other.Stats().Requests > hung.Stats().Requests {
		hung, other = other, hung
	}
	otherBefore := other.Stats().Requests

	done := make(chan []fleet.Shot, 1)
	go func() { done <- g.Load(ctx, 16, 15*time.Second, path, stallChat) }()
	time.Sleep(time.Second)
	hung.Reset()
	require.NoError(t, hung.SetFault(grpcsim.FaultHang))
	hungAt := time.Now()
	shots := <-done
	hung.ClearFaults()

	fast, worst := 0, time.Duration(0)
	for i, sh := range shots {
		require.Equal(t, http.StatusOK, sh.Status, "request %d (started %v after the hang): %v %s", i, sh.Start.Sub(hungAt).Round(time.Millisecond), sh.Err, sh.Body)
		assert.NotContains(t, string(sh.Body), `"error"`, "request %d: a clean stream", i)
		assert.True(t, strings.HasSuffix(strings.TrimSpace(string(sh.Body)), "data: [DONE]"), "request %d ends with [DONE]", i)
		if sh.Elapsed < 2*healthy {
			fast++
		}
		worst = max(worst, sh.Elapsed)
	}
	t.Logf("%d requests, healthy median %v, %d under 2× it, worst %v", len(shots), healthy, fast, worst)
	assert.Less(t, worst, 15*time.Second, "a stranded request is retried within the stall bound and the canary deadline")
	// The share under 2× the healthy median is a timing figure: logged here, measured by
	// the liveness benchmark.
	assert.Greater(t, other.Stats().Requests, otherBefore, "the healthy decode serves the rest")

	require.Eventually(t, func() bool {
		for _, x := range s {
			if x.Stats().Running != 0 {
				return false
			}
		}
		return true
	}, 10*time.Second, 10*time.Millisecond, "every leg ended")
	st := hung.Stats()
	assert.GreaterOrEqual(t, st.CanaryRequests, int64(1), "a canary confirmed the hung decode")
	stranded := st.Requests - st.CanaryRequests
	assert.Positive(t, stranded, "client legs reached the hung decode before it was suspected")
	assert.LessOrEqual(t, stranded, int64(16), "only the legs in flight when it hung (one per client)")
	assert.GreaterOrEqual(t, st.AbortRPCs, stranded, "each stranded leg got its Abort RPC (%+v)", st)
	assert.Equal(t, st.Requests, st.Aborted, "every leg that reached the hung decode was aborted (%+v)", st)
	mt := g.Metrics(t)
	state := func(url string) float64 {
		ss := mt.Find("smg_worker_cb_state", "worker", url)
		require.Len(t, ss, 1, url)
		return ss[0].Value
	}
	fails := func(url string) float64 {
		return mt.Sum("smg_worker_cb_outcomes_total", "worker", url, "outcome", "failure")
	}
	assert.Equal(t, float64(1), state(hung.URL()), "the hung decode's breaker opened")
	assert.Positive(t, fails(hung.URL()), "the hung decode was charged")
	for _, x := range append([]*grpcsim.Server{other}, prefills...) {
		assert.Equal(t, []float64{0, 0}, []float64{state(x.URL()), fails(x.URL())}, "healthy %s: breaker closed, nothing blamed", x.URL())
	}
}

// An open gRPC SGLang prefill breaker past --cb-timeout-duration-secs is closed by canaries
// only (a Generate with the fake bootstrap host, answered without a decode), never by a
// client's answer, even one served to the lone prefill in panic mode:
// --cb-success-threshold passing canaries close it.
func TestGRPCHalfOpenProbesAreCanaries(t *testing.T) {
	t.Parallel()
	g, p, d := pdFleet(t, grpcsim.EngineSGLang, nil, func(c *config.Config) {
		c.DisableRetries, c.CBFailureThreshold, c.CBSuccessThreshold, c.CBTimeout = true, 2, 2, 500*time.Millisecond
	})
	body := map[string]any{"model": pdModel, "prompt": "half open", "max_tokens": 2}
	require.NoError(t, p.SetFault("status:503"))
	for range 2 {
		r := g.Post(t, "/v1/completions", body, nil)
		require.Equal(t, http.StatusServiceUnavailable, r.Status, "%s", r.Body)
	}
	p.ClearFaults()
	state := func(url string) float64 {
		ss := g.Metrics(t).Find("smg_worker_cb_state", "worker", url)
		require.Len(t, ss, 1, url)
		return ss[0].Value
	}
	require.Equal(t, float64(1), state(p.URL()), "two failures opened the prefill's breaker")
	before, sent := p.Stats().Requests, p.Stats().HandoffsSent
	// The lone prefill is in panic mode: a client's request still goes to it, and its
	// success does not move the open breaker (only canaries do).
	r := g.Post(t, "/v1/completions", body, nil)
	require.Equal(t, http.StatusOK, r.Status, "panic mode: %s", r.Body)
	require.Equal(t, float64(1), state(p.URL()), "a panic-mode success leaves the breaker open")

	require.Eventually(t, func() bool { return state(p.URL()) == 0 }, 10*time.Second, 20*time.Millisecond,
		"two passing canaries close it")
	st := p.Stats()
	assert.Equal(t, []int64{2, before + 3}, []int64{st.CanaryRequests, st.Requests}, "the panic-mode request and the canaries, nothing else")
	assert.Equal(t, sent+1, st.HandoffsSent, "the panic-mode request's handoff only: a canary needs no decode")
	assert.Zero(t, d.Stats().CanaryRequests)
	r = g.Post(t, "/v1/completions", body, nil)
	require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
}
