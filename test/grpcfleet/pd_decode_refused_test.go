package grpcfleet_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/app/config"
	"github.com/smg-go/smg/test/sim/grpcsim"
)

// A decode the engine refuses (INVALID_ARGUMENT) answers 400 at once; the prefill, waiting
// for the decode to take its room, is aborted at once.
func TestGRPCDecodeRefusedFailsFast(t *testing.T) {
	t.Parallel()
	g, p, d := pdFleet(t, grpcsim.EngineSGLang, func(role string, c *grpcsim.Config) {
		if role == grpcsim.RoleDecode {
			c.Faults = []string{"status:400"}
		}
	}, func(c *config.Config) { c.DisableRetries = true })
	warm(t, g)
	start := time.Now()
	r := g.Post(t, "/generate", map[string]any{"text": "decode refuses", "sampling_params": map[string]any{"max_new_tokens": 3}}, nil)
	elapsed := time.Since(start)
	require.Equal(t, http.StatusBadRequest, r.Status, string(r.Body))
	assert.Equal(t, "decode_worker_failed_to_start", errCode(t, r))
	assert.Less(t, elapsed, faultBound)
	// The legs start together, so on a loaded machine the decode's refusal can come before
	// the prefill's Generate is sent; then the leg is cancelled before it reaches the engine.
	// Either way the prefill gets its Abort RPC and nothing is left running on it.
	require.Eventually(t, func() bool {
		s := p.Stats()
		return s.AbortRPCs == 1 && s.Aborted == s.Requests && s.Running == 0 && s.Requests <= 1
	}, faultBound, 10*time.Millisecond, "the prefill leg is aborted: %+v", p.Stats())
	assert.Zero(t, p.Stats().UnmatchedRooms, "the room was withdrawn, not left to time out")
	assert.EqualValues(t, 1, d.Stats().Errors)
}
