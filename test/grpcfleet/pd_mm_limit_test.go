package grpcfleet_test

import (
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

// An image whose patch rows exceed the engine's gRPC receive limit (the simulators keep
// grpc-go's default 4 MiB, the gateway's default --engine-max-message-mb) is refused by the
// gateway from the image's header: 413 payload_too_large naming both sizes, no engine
// received anything, no breaker moved.
func TestMMImageOverEngineMessageLimitRefusedFromHeader(t *testing.T) {
	t.Parallel()
	m, dir := qwenVL(t)
	mk := func(role string) grpcsim.Config {
		return grpcsim.Config{Engine: grpcsim.EngineSGLang, Role: role, Model: pdModel, TokenizerPath: dir}
	}
	s := sims(t, mk(grpcsim.RolePrefill), mk(grpcsim.RoleDecode))
	cfg := fleet.DefaultConfig()
	cfg.Prefill = []config.PrefillSpec{{URL: s[0].URL(), BootstrapPort: port(s[0].BootstrapPort())}}
	cfg.Decode = []string{s[1].URL()}
	g := fleet.StartGateway(t, cfg, fx.Decorate(func(r *text.Registry) *text.Registry { r.Put(pdModel, m); return r }))
	g.WaitWorkers(t, 2)

	start := time.Now()
	r := g.Post(t, "/v1/chat/completions", map[string]any{"model": pdModel, "max_tokens": 3,
		"messages": mmMessages("What is it?", dataURL(testPNG(t, 448, 448, 2)))}, nil)
	elapsed := time.Since(start)
	require.Equal(t, http.StatusRequestEntityTooLarge, r.Status, string(r.Body))
	assert.Less(t, elapsed, faultBound, "answered at once")
	assert.Equal(t, "payload_too_large", r.Header.Get("X-SMG-Error-Code"))
	e, _ := r.Object(t)["error"].(map[string]any)
	require.NotNil(t, e, string(r.Body))
	assert.Equal(t, "payload_too_large", e["code"])
	msg, _ := e["message"].(string)
	assert.Contains(t, msg, "4816896 bytes", "448x448: 1,024 patch rows of 1,176 float32")
	assert.Contains(t, msg, "limit of 4194304 bytes")
	for _, w := range s {
		assert.Zero(t, w.Stats().Requests, "%s received nothing", w.URL())
		hp := strings.TrimPrefix(w.URL(), "grpc://")
		assert.Zero(t, cbOutcomes(t, g, hp, "failure"), w.URL())
		assert.Zero(t, cbOutcomes(t, g, hp, "success"), w.URL())
	}
}

// With the gateway's check off (--engine-max-message-mb 0), the first prefill refuses the
// same image with RESOURCE_EXHAUSTED "received message larger than max": the gateway answers
// a non-retryable 413 naming the sizes at once, after one prefill attempt (the second
// prefill is never tried), and no breaker moves.
func TestMMImageOverEngineMessageLimit(t *testing.T) {
	t.Parallel()
	m, dir := qwenVL(t)
	mk := func(role string) grpcsim.Config {
		return grpcsim.Config{Engine: grpcsim.EngineSGLang, Role: role, Model: pdModel, TokenizerPath: dir}
	}
	s := sims(t, mk(grpcsim.RolePrefill), mk(grpcsim.RolePrefill), mk(grpcsim.RoleDecode))
	cfg := fleet.DefaultConfig()
	cfg.Prefill = []config.PrefillSpec{
		{URL: s[0].URL(), BootstrapPort: port(s[0].BootstrapPort())},
		{URL: s[1].URL(), BootstrapPort: port(s[1].BootstrapPort())},
	}
	cfg.Decode = []string{s[2].URL()}
	cfg.EngineMaxMessageMB = 0
	g := fleet.StartGateway(t, cfg, fx.Decorate(func(r *text.Registry) *text.Registry { r.Put(pdModel, m); return r }))
	g.WaitWorkers(t, 3)

	// A small image fits and is served: the fleet itself works.
	ok := g.Post(t, "/v1/chat/completions", map[string]any{"model": pdModel, "max_tokens": 3,
		"messages": mmMessages("What is it?", dataURL(testPNG(t, 64, 64, 1)))}, nil)
	require.Equal(t, http.StatusOK, ok.Status, string(ok.Body))
	before := g.Metrics(t).Sum("smg_worker_selection_total", "worker_type", "prefill")

	// 448x448 px is 1,024 patch rows of 1,176 float32: ~4.8 MB of pixel values.
	start := time.Now()
	r := g.Post(t, "/v1/chat/completions", map[string]any{"model": pdModel, "max_tokens": 3,
		"messages": mmMessages("What is it?", dataURL(testPNG(t, 448, 448, 2)))}, nil)
	elapsed := time.Since(start)
	t.Logf("refused in %s", elapsed)
	require.Equal(t, http.StatusRequestEntityTooLarge, r.Status, string(r.Body))
	assert.Less(t, elapsed, faultBound, "answered at once")
	e, _ := r.Object(t)["error"].(map[string]any)
	require.NotNil(t, e, string(r.Body))
	assert.Equal(t, "prefill_worker_failed_to_start", e["code"])
	assert.Equal(t, "invalid_request_error", e["type"], "not a 429 rate_limit_error an SDK would retry")
	msg, _ := e["message"].(string)
	assert.Contains(t, msg, "received message larger than max")
	assert.Contains(t, msg, "vs. 4194304", "the message names the limit")

	mt := g.Metrics(t)
	assert.Equal(t, before+1, mt.Sum("smg_worker_selection_total", "worker_type", "prefill"), "one prefill attempt, no retry")
	for _, w := range s {
		hp := strings.TrimPrefix(w.URL(), "grpc://")
		assert.Zero(t, cbOutcomes(t, g, hp, "failure"), w.URL())
		assert.Zero(t, cbOutcomes(t, g, hp, "ignored"), w.URL())
	}
	// Only the small image's legs reached the breakers as successes.
	total := 0.0
	for _, w := range s {
		total += cbOutcomes(t, g, strings.TrimPrefix(w.URL(), "grpc://"), "success")
	}
	assert.Equal(t, 2.0, total, "the refused request moved no breaker")
}
