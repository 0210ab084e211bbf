package pipeline_test

import (
	"context"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/test/sim/grpcsim"
)

// A TokenSpeed prefill that is attention-DP rank 3 of 4: every room the gateway mints maps
// to rank 3 (the simulator refuses any other residue on both legs).
func TestTokenSpeedRoomsLandOnThePrefillRank(t *testing.T) {
	r := newEngineRig(t, grpcsim.EngineTokenSpeed, time.Second, func(role string, c *grpcsim.Config) {
		c.DPSize, c.DPRank = 4, 3
	})
	rank, size := 3, 4
	r.pw.DPRank, r.pw.DPSize = &rank, &size
	for i := 0; i < 8; i++ {
		rec, committed, err := r.attempt(t, context.Background(), `{"text":"dp request `+strconv.Itoa(i)+`","sampling_params":{"max_new_tokens":2}}`)
		require.NoError(t, err)
		assert.True(t, committed)
		assert.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	}
	assert.EqualValues(t, 8, r.p.Stats().HandoffsSent)
	assert.EqualValues(t, 8, r.d.Stats().HandoffsReceived)
	assert.Zero(t, r.p.Stats().Errors+r.d.Stats().Errors, "no room with a wrong residue")
}
