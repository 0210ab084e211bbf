package fleetbench_test

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/test/fleetbench"
)

// TestTwoTenantsEndToEnd runs the two-tenants benchmark tiny: the generated tenants file's
// keys are accepted by the gateways (no 401), every mode runs on its own fleet in order, the
// batch tenant only sends in the loaded modes, and each request ends admitted or shed with
// 503 (nothing else). With priorities and a long queue deadline every interactive request
// is admitted.
func TestTwoTenantsEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs smg and smg-sim")
	}
	bin := t.TempDir()
	var log bytes.Buffer
	require.NoError(t, fleetbench.EnsureBinaries(bin, false, &log), log.String())
	shape := fleetbench.DefaultShape()
	shape.MaxTokens, shape.UniqueMin, shape.UniqueMax = 8, 20, 40
	knobs := fleetbench.DefaultKnobs()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cells, err := fleetbench.RunTenants(ctx, fleetbench.TenantsConfig{
		Base: fleetbench.Config{BinDir: bin, Engine: "vllm", Prefills: 1, Decodes: 1, Policies: []string{"round_robin"},
			Replicas: []int{1}, Rate: 40, Requests: 30, Duration: 20 * time.Second, RequestTimeout: 30 * time.Second,
			Seed: 1, Shape: shape, Sim: knobs, Log: &log},
		DecodeWindow: 2, InteractiveRate: 5, InteractiveRequests: 5, InteractiveMaxTokens: 4, QueueWait: 20 * time.Second,
	})
	require.NoError(t, err, log.String())
	require.Len(t, cells, 4)
	for i, mode := range []string{fleetbench.ModeUnloaded, fleetbench.ModeNoQueue, fleetbench.ModeEqual, fleetbench.ModePriorities} {
		c := cells[i]
		assert.Equal(t, mode, c.Mode)
		assert.Equal(t, 5, c.Interactive.Sent, mode)
		assert.Zero(t, c.Interactive.Errors, mode)
		assert.Zero(t, c.Batch.Errors, mode)
		if mode == fleetbench.ModeUnloaded {
			assert.Zero(t, c.Batch.Sent)
		} else {
			assert.Equal(t, 30, c.Batch.Sent, mode)
			assert.Equal(t, 30, c.Batch.OK+c.Batch.Shed, mode)
		}
	}
	assert.Equal(t, 5, cells[3].Interactive.OK, "priorities: every interactive request admitted")
}
