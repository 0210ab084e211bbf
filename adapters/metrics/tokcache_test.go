package metrics_test

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/adapters/metrics"
	"github.com/smg-go/smg/domain/text"
)

// The tokenizer cache series are read from the cache on every scrape, per layer.
func TestTokenizerCacheSeries(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	s := text.EncodeCacheStats{L0Hits: 3, L0Misses: 1, L1Hits: 5, L1Misses: 2, L0Evictions: 4, L1Evictions: 6,
		L0ReusedBytes: 300, L1ReusedBytes: 500, L0Entries: 7, L1Entries: 8, L0Bytes: 1000, L1Bytes: 2000}
	require.NoError(t, metrics.RegisterTokenizerCache(reg, func() text.EncodeCacheStats { return s }))
	want := `
# HELP smg_tokenizer_cache_lookups_total Tokenizer cache lookups by layer (l0 whole inputs, l1 pieces between special tokens) and result (hit, miss).
# TYPE smg_tokenizer_cache_lookups_total counter
smg_tokenizer_cache_lookups_total{layer="l0",result="hit"} 3
smg_tokenizer_cache_lookups_total{layer="l0",result="miss"} 1
smg_tokenizer_cache_lookups_total{layer="l1",result="hit"} 5
smg_tokenizer_cache_lookups_total{layer="l1",result="miss"} 2
# HELP smg_tokenizer_cache_evictions_total Tokenizer cache entries removed to make room, by layer.
# TYPE smg_tokenizer_cache_evictions_total counter
smg_tokenizer_cache_evictions_total{layer="l0"} 4
smg_tokenizer_cache_evictions_total{layer="l1"} 6
# HELP smg_tokenizer_cache_reused_bytes_total Input bytes whose token ids came from a tokenizer cache hit, by layer.
# TYPE smg_tokenizer_cache_reused_bytes_total counter
smg_tokenizer_cache_reused_bytes_total{layer="l0"} 300
smg_tokenizer_cache_reused_bytes_total{layer="l1"} 500
# HELP smg_tokenizer_cache_entries Entries the tokenizer cache holds, by layer.
# TYPE smg_tokenizer_cache_entries gauge
smg_tokenizer_cache_entries{layer="l0"} 7
smg_tokenizer_cache_entries{layer="l1"} 8
# HELP smg_tokenizer_cache_memory_bytes Accounted memory the tokenizer cache holds (text, ids and a fixed cost per entry) in bytes, by layer.
# TYPE smg_tokenizer_cache_memory_bytes gauge
smg_tokenizer_cache_memory_bytes{layer="l0"} 1000
smg_tokenizer_cache_memory_bytes{layer="l1"} 2000
`
	require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(want)))
	s.L0Hits = 10
	require.Equal(t, 10.0, gatherValue(t, reg, "smg_tokenizer_cache_lookups_total", "l0", "hit"), "read on every scrape")
	require.Error(t, metrics.RegisterTokenizerCache(reg, func() text.EncodeCacheStats { return s }), "registered once")
}

func gatherValue(t *testing.T, reg *prometheus.Registry, name, layer, result string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			l := map[string]string{}
			for _, lp := range m.GetLabel() {
				l[lp.GetName()] = lp.GetValue()
			}
			if l["layer"] == layer && l["result"] == result {
				return m.GetCounter().GetValue()
			}
		}
	}
	t.Fatalf("%s{layer=%q,result=%q} not found", name, layer, result)
	return 0
}
