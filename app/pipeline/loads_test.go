package pipeline_test

import (
	"context"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/adapters/engine/grpcengine"
	"github.com/smg-go/smg/adapters/metrics"
	"github.com/smg-go/smg/adapters/store/memory"
	"github.com/smg-go/smg/app/pipeline"
	"github.com/smg-go/smg/domain/worker"
	"github.com/smg-go/smg/test/sim/grpcsim"
)

// The SGLang servicer's disaggregation section becomes the smg_engine_pd_* gauges per
// worker, role and DP rank; a removed worker's series go.
func TestLoadPollerPublishesEnginePDGauges(t *testing.T) {
	s, err := grpcsim.Start(grpcsim.Config{Engine: grpcsim.EngineSGLang, Role: grpcsim.RolePrefill})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	store := memory.NewWorkers()
	w := worker.NewLive(worker.Worker{ID: "p", URL: s.URL(), Role: worker.RolePrefill, Runtime: worker.RuntimeSGLang, Mode: worker.ConnGRPC}, worker.StatusReady)
	require.NoError(t, store.Add(w))
	pool := grpcengine.New(grpcengine.Options{})
	t.Cleanup(func() { _ = pool.Close() })
	reg := prometheus.NewRegistry()
	m, err := metrics.NewEnginePDMetrics(reg)
	require.NoError(t, err)
	lp := pipeline.NewLoadPoller(store, pool, m, nil)
	lp.PollOnce(context.Background())

	want := `
# HELP smg_engine_pd_kv_transfer_latency_ms KV transfer latency reported by the engine, milliseconds.
# TYPE smg_engine_pd_kv_transfer_latency_ms gauge
smg_engine_pd_kv_transfer_latency_ms{dp_rank="0",role="prefill",worker="` + s.URL() + `"} 2.5
`
	assert.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(want), metrics.NameEnginePDKVTransferLatency))
	n, err := testutil.GatherAndCount(reg, metrics.NameEnginePDKVTransferSpeed, metrics.NameEnginePDPrefillQueue, metrics.NameEnginePDDecodeQueue)
	require.NoError(t, err)
	assert.Equal(t, 3, n)

	_, err = store.Remove("p")
	require.NoError(t, err)
	n, err = testutil.GatherAndCount(reg)
	require.NoError(t, err)
	assert.Zero(t, n, "a removed worker's gauges are deleted")
}
