package metrics_test

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/adapters/metrics"
)

func TestDiscoveryMetrics(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	m, err := metrics.NewDiscoveryMetrics(reg)
	require.NoError(t, err)
	m.Sync("kubernetes", 3, 2, 1, 0, 5*time.Millisecond)
	m.Sync("kubernetes", 1, 0, 0, 2, time.Millisecond)
	mfs, err := reg.Gather()
	require.NoError(t, err)
	got := map[string]bool{}
	for _, mf := range mfs {
		got[mf.GetName()] = true
	}
	for _, n := range []string{"smg_discovery_registrations_total", "smg_discovery_deregistrations_total",
		"smg_discovery_sync_duration_seconds", "smg_discovery_workers_discovered"} {
		assert.True(t, got[n], n)
	}
	n, err := testutil.GatherAndCount(reg, "smg_discovery_sync_duration_seconds")
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	_, err = metrics.NewDiscoveryMetrics(reg)
	assert.Error(t, err, "registered twice")
}
