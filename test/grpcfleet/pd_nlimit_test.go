package grpcfleet_test

import (
	"encoding/json"
	"net/http"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/domain/handoff"
	"github.com/smg-go/smg/test/sim/grpcsim"
)

// An n above the gateway's fan-out limit (handoff.MaxSamples, which the HTTP PD path
// enforces with 400 invalid_request) is refused over gRPC too, before any leg: no
// prefill or decode dispatch is made for it.
func TestGRPCFanOutLimit(t *testing.T) {
	t.Parallel()
	g, p, d := pdFleet(t, grpcsim.EngineSGLang, nil, nil)
	for _, n := range []int{handoff.MaxSamples + 1, 5000} {
		r := g.Post(t, "/v1/completions", map[string]any{"model": pdModel, "prompt": "hi", "max_tokens": 2, "n": n}, nil)
		require.Equal(t, http.StatusBadRequest, r.Status, "n=%d: %s", n, r.Body)
		assert.Equal(t, "invalid_request", errCode(t, r))
		assert.Contains(t, string(r.Body), "n="+strconv.Itoa(n)+" exceeds the gateway's fan-out limit of 128 samples")
	}
	r := g.Post(t, "/v1/chat/completions", map[string]any{"model": pdModel,
		"messages": []map[string]any{{"role": "user", "content": "hi"}}, "max_tokens": 2, "n": handoff.MaxSamples + 1}, nil)
	require.Equal(t, http.StatusBadRequest, r.Status, string(r.Body))
	var body struct {
		Error struct {
			Code string `json:"code"`
		} `json:"error"`
	}
	require.NoError(t, json.Unmarshal(r.Body, &body))
	assert.Equal(t, "invalid_request", body.Error.Code)
	assert.Zero(t, p.Stats().Requests, "no prefill dispatch")
	assert.Zero(t, d.Stats().Requests, "no decode dispatch")
}
