package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/smg-go/smg/domain/text"
)

// Tokenizer cache series (SMG's names and labels; docs/observability.md). Process-wide,
// summed over every model's tokenizer, read from the cache on each scrape: both layers
// always appear, a disabled one at zero. No label carries a model or prompt text.
const (
	NameTokenizerCacheLookups     = "smg_tokenizer_cache_lookups_total"
	NameTokenizerCacheEvictions   = "smg_tokenizer_cache_evictions_total"
	NameTokenizerCacheReusedBytes = "smg_tokenizer_cache_reused_bytes_total"
	NameTokenizerCacheEntries     = "smg_tokenizer_cache_entries"
	NameTokenizerCacheBytes       = "smg_tokenizer_cache_memory_bytes"

	LabelLayer = "layer"
)

// RegisterTokenizerCache registers the tokenizer cache series on reg, read from stats on
// every scrape (text.Registry.Cache().Stats; a nil cache reads zero). Errors: a series of
// the same name is already registered.
func RegisterTokenizerCache(reg prometheus.Registerer, stats func() text.EncodeCacheStats) error {
	return reg.Register(&tokCacheCollector{stats: stats})
}

var (
	tokLookupsDesc = prometheus.NewDesc(NameTokenizerCacheLookups,
		"Tokenizer cache lookups by layer (l0 whole inputs, l1 pieces between special tokens) and result (hit, miss).", []string{LabelLayer, LabelResult}, nil)
	tokEvictionsDesc = prometheus.NewDesc(NameTokenizerCacheEvictions,
		"Tokenizer cache entries removed to make room, by layer.", []string{LabelLayer}, nil)
	tokReusedDesc = prometheus.NewDesc(NameTokenizerCacheReusedBytes,
		"Input bytes whose token ids came from a tokenizer cache hit, by layer.", []string{LabelLayer}, nil)
	tokEntriesDesc = prometheus.NewDesc(NameTokenizerCacheEntries,
		"Entries the tokenizer cache holds, by layer.", []string{LabelLayer}, nil)
	tokBytesDesc = prometheus.NewDesc(NameTokenizerCacheBytes,
		"Accounted memory the tokenizer cache holds (text, ids and a fixed cost per entry) in bytes, by layer.", []string{LabelLayer}, nil)
)

type tokCacheCollector struct {
	stats func() text.EncodeCacheStats
}

func (c *tokCacheCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{tokLookupsDesc, tokEvictionsDesc, tokReusedDesc, tokEntriesDesc, tokBytesDesc} {
		ch <- d
	}
}

func (c *tokCacheCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.stats()
	type layer struct {
		name                         string
		hits, misses, evicted, reuse uint64
		entries                      int
		bytes                        int64
	}
	for _, l := range []layer{
		{"l0", s.L0Hits, s.L0Misses, s.L0Evictions, s.L0ReusedBytes, s.L0Entries, s.L0Bytes},
		{"l1", s.L1Hits, s.L1Misses, s.L1Evictions, s.L1ReusedBytes, s.L1Entries, s.L1Bytes},
	} {
		ch <- prometheus.MustNewConstMetric(tokLookupsDesc, prometheus.CounterValue, float64(l.hits), l.name, "hit")
		ch <- prometheus.MustNewConstMetric(tokLookupsDesc, prometheus.CounterValue, float64(l.misses), l.name, "miss")
		ch <- prometheus.MustNewConstMetric(tokEvictionsDesc, prometheus.CounterValue, float64(l.evicted), l.name)
		ch <- prometheus.MustNewConstMetric(tokReusedDesc, prometheus.CounterValue, float64(l.reuse), l.name)
		ch <- prometheus.MustNewConstMetric(tokEntriesDesc, prometheus.GaugeValue, float64(l.entries), l.name)
		ch <- prometheus.MustNewConstMetric(tokBytesDesc, prometheus.GaugeValue, float64(l.bytes), l.name)
	}
}
