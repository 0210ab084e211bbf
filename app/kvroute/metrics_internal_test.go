package kvroute

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/adapters/kvevents"
	"github.com/smg-go/smg/adapters/metrics"
	"github.com/smg-go/smg/domain/worker"
)

func TestSeriesExportPredictedAndEngineCachedTokens(t *testing.T) {
	t.Parallel()
	r, err := New(Options{Dial: func(worker.Worker) (kvevents.KvEventsClient, error) { return nil, nil }})
	require.NoError(t, err)
	r.Predicted("http://u:secret@p:1", 48)
	r.EngineCached("http://u:secret@p:1", 64, 32)
	reg := prometheus.NewRegistry()
	require.NoError(t, metrics.RegisterKVEvents(reg, func() []metrics.KVWorkerSeries { return series(r) }))
	want := `
# HELP smg_router_kv_cached_tokens_total Cached prompt tokens by source: predicted (cache_aware's match at selection) or engine (the prefill's reported usage).
# TYPE smg_router_kv_cached_tokens_total counter
smg_router_kv_cached_tokens_total{source="engine",worker="http://redacted@p:1"} 32
smg_router_kv_cached_tokens_total{source="predicted",worker="http://redacted@p:1"} 48
`
	assert.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(want), "smg_router_kv_cached_tokens_total"))
	assert.Equal(t, 1, testutil.CollectAndCount(reg, "smg_router_kv_prompt_tokens_total"))
	assert.Zero(t, testutil.CollectAndCount(reg, "smg_kv_events_connected"), "no subscription, no stream series")
}

func TestSeriesExportSpeculativeOutcomes(t *testing.T) {
	t.Parallel()
	r, err := New(Options{Dial: func(worker.Worker) (kvevents.KvEventsClient, error) { return nil, nil }})
	require.NoError(t, err)
	const url = "grpc://127.0.0.1:9"
	r.spec.mu.Lock()
	*r.spec.countsLocked(url) = SpecCounts{Confirmed: 3, Expired: 1, Dropped: 2, ConfirmSeconds: 1.5}
	r.spec.mu.Unlock()
	reg := prometheus.NewRegistry()
	require.NoError(t, metrics.RegisterKVEvents(reg, func() []metrics.KVWorkerSeries { return series(r) }))
	want := `
# HELP smg_router_kv_speculative_confirm_seconds_total Summed age of the confirmed speculative entries at confirmation, seconds.
# TYPE smg_router_kv_speculative_confirm_seconds_total counter
smg_router_kv_speculative_confirm_seconds_total{worker="grpc://127.0.0.1:9"} 1.5
# HELP smg_router_kv_speculative_total Speculative entries ended, by outcome: confirmed (the worker's events stored the prompt), expired, dropped.
# TYPE smg_router_kv_speculative_total counter
smg_router_kv_speculative_total{outcome="confirmed",worker="grpc://127.0.0.1:9"} 3
smg_router_kv_speculative_total{outcome="dropped",worker="grpc://127.0.0.1:9"} 2
smg_router_kv_speculative_total{outcome="expired",worker="grpc://127.0.0.1:9"} 1
`
	assert.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(want),
		"smg_router_kv_speculative_total", "smg_router_kv_speculative_confirm_seconds_total"))
}
