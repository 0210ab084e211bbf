package metrics_test

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/adapters/metrics"
)

func TestFlowQueueSeries(t *testing.T) {
	t.Parallel()
	reg := metrics.NewRegistry()
	m, err := metrics.NewFlowQueueMetrics(reg)
	require.NoError(t, err)
	_, err = metrics.NewFlowQueueMetrics(reg)
	require.Error(t, err, "registering the series twice fails")

	m.AddQueued("batch", 1)
	m.AddQueued("batch", 1)
	m.AddQueued("batch", -1)
	m.AddQueued("", 1)
	m.IncQueueShed("batch", "evicted")
	m.ObserveQueueTime("batch", "admitted", 30*time.Millisecond)

	want := `
# HELP smg_flow_queue_depth Requests queued for a decode slot on this replica, per tenant.
# TYPE smg_flow_queue_depth gauge
smg_flow_queue_depth{tenant="anonymous"} 1
smg_flow_queue_depth{tenant="batch"} 1
# HELP smg_flow_queue_enqueued_total Requests that entered the flow-control queue because the decode window was full, per tenant.
# TYPE smg_flow_queue_enqueued_total counter
smg_flow_queue_enqueued_total{tenant="anonymous"} 1
smg_flow_queue_enqueued_total{tenant="batch"} 2
# HELP smg_flow_queue_sheds_total Requests the flow-control queue shed with 503, per tenant and reason (deadline, evicted, queue_full).
# TYPE smg_flow_queue_sheds_total counter
smg_flow_queue_sheds_total{reason="evicted",tenant="batch"} 1
`
	require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(want),
		"smg_flow_queue_depth", "smg_flow_queue_enqueued_total", "smg_flow_queue_sheds_total"))
	n, err := testutil.GatherAndCount(reg, "smg_flow_queue_wait_seconds")
	require.NoError(t, err)
	assert.Equal(t, 1, n)
}
