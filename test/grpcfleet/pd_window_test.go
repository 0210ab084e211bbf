package grpcfleet_test

import (
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/test/fleet"
	"github.com/smg-go/smg/test/sim/grpcsim"
)

// A request that needs more decode slots (one per prompt and sample) than the decode's
// whole admission window can never be admitted: 400 admission_window_exceeded in the
// seed's body shape, at once, with no Retry-After, no leg sent, no shed counted and no
// breaker moved. A request exactly at the window is served.
func TestGRPCRequestLargerThanTheWindowIsA400(t *testing.T) {
	t.Parallel()
	t.Run("a 10,000-prompt batch on the default window", func(t *testing.T) {
		t.Parallel()
		g, p, d := pdFleet(t, grpcsim.EngineSGLang, nil, nil) // SGLang's default max_running_requests 2048
		warm(t, g)
		texts := make([]string, 10000)
		for i := range texts {
			texts[i] = "prompt " + strconv.Itoa(i)
		}
		start := time.Now()
		r := g.Post(t, "/generate", map[string]any{"text": texts, "sampling_params": map[string]any{"max_new_tokens": 1}}, nil)
		requireTooLarge(t, r, 10000, 2048)
		assert.Less(t, time.Since(start), faultBound, "refused at once, not after --pd-admission-wait-secs")
		assertNothingSent(t, g, p, d)
	})
	t.Run("prompts × n over a small window", func(t *testing.T) {
		t.Parallel()
		g, p, d := pdFleet(t, grpcsim.EngineSGLang, func(_ string, c *grpcsim.Config) { c.MaxRunningRequests = 4 }, nil)
		warm(t, g)
		r := g.Post(t, "/v1/completions", map[string]any{"model": pdModel, "prompt": []string{"a", "b"}, "n": 3, "max_tokens": 2}, nil)
		requireTooLarge(t, r, 6, 4)
		assertNothingSent(t, g, p, d)

		r = g.Post(t, "/v1/completions", map[string]any{"model": pdModel, "prompt": []string{"a", "b"}, "n": 2, "max_tokens": 2}, nil)
		require.Equal(t, http.StatusOK, r.Status, "2 × 2 fills the window of 4 exactly: %s", r.Body)
		assert.Len(t, r.Object(t)["choices"], 4)
	})
}

// requireTooLarge asserts the refusal of a request needing n slots on a window of window.
func requireTooLarge(t *testing.T, r *fleet.Response, n, window int) {
	t.Helper()
	require.Equal(t, http.StatusBadRequest, r.Status, string(r.Body))
	assert.Equal(t, "admission_window_exceeded", errCode(t, r))
	e := r.Object(t)["error"].(map[string]any)
	assert.Equal(t, "invalid_request_error", e["type"])
	assert.Contains(t, e["message"], "needs "+strconv.Itoa(n)+" decode slots")
	assert.Contains(t, e["message"], "admission window of "+strconv.Itoa(window))
	assert.Empty(t, r.Header.Get("Retry-After"), "not a shed: retrying cannot help")
}

// assertNothingSent checks that no leg reached either simulator, no shed was counted and
// no breaker moved.
func assertNothingSent(t *testing.T, g *fleet.Gateway, p, d *grpcsim.Server) {
	t.Helper()
	assert.Zero(t, p.Stats().Requests+d.Stats().Requests, "no leg was sent")
	assert.Zero(t, g.Metrics(t).Sum("smg_pd_admission_sheds_total"), "not counted as a shed")
	for _, s := range []*grpcsim.Server{p, d} {
		assert.Zero(t, cbOutcomes(t, g, strings.TrimPrefix(s.URL(), "grpc://"), "failure"))
	}
}
