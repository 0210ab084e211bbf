package load_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/smg-go/smg/test/load"
)

func TestQuantileIsNearestRank(t *testing.T) {
	t.Parallel()
	ms := func(xs ...int) []time.Duration {
		out := make([]time.Duration, len(xs))
		for i, x := range xs {
			out[i] = time.Duration(x) * time.Millisecond
		}
		return out
	}
	hundred := make([]time.Duration, 100)
	for i := range hundred {
		hundred[i] = time.Duration(i+1) * time.Millisecond
	}
	cases := []struct {
		name   string
		sorted []time.Duration
		q      float64
		want   time.Duration
	}{
		{"empty is zero", nil, 0.5, 0},
		{"one value is every quantile", ms(7), 0.99, 7 * time.Millisecond},
		{"median of an odd count is the middle", ms(1, 2, 3), 0.5, 2 * time.Millisecond},
		{"median of an even count is the lower middle", ms(1, 2, 3, 4), 0.5, 2 * time.Millisecond},
		{"p99 of 1..100 is 99", hundred, 0.99, 99 * time.Millisecond},
		{"p90 of 1..100 is 90", hundred, 0.90, 90 * time.Millisecond},
		{"p100 is the max", hundred, 1, 100 * time.Millisecond},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			assert.Equal(t, tc.want, load.Quantile(tc.sorted, tc.q))
		})
	}
}

func TestSummariseSortsAndReportsMax(t *testing.T) {
	t.Parallel()
	xs := []time.Duration{5, 1, 4, 2, 3}
	p := load.Summarise(xs)
	assert.Equal(t, load.Percentiles{N: 5, P50: 3, P90: 5, P99: 5, Max: 5}, p)
	assert.Equal(t, []time.Duration{1, 2, 3, 4, 5}, xs)
	assert.Equal(t, load.Percentiles{}, load.Summarise(nil))
}

func TestMedian(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		xs   []float64
		want float64
	}{
		{"none", nil, 0},
		{"odd", []float64{3, 1, 2}, 2},
		{"even averages the middle pair", []float64{4, 1, 3, 2}, 2.5},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			in := append([]float64(nil), tc.xs...)
			assert.Equal(t, tc.want, load.Median(tc.xs))
			assert.Equal(t, in, tc.xs, "input not modified")
		})
	}
}

func TestPairRatios(t *testing.T) {
	t.Parallel()
	gw := load.Summary{Throughput: 800,
		Latency: load.Percentiles{P50: 3 * time.Millisecond, P99: 11 * time.Millisecond},
		TTFT:    load.Percentiles{P50: 2 * time.Millisecond, P99: 6 * time.Millisecond}}
	direct := load.Summary{Throughput: 1000,
		Latency: load.Percentiles{P50: 2 * time.Millisecond, P99: 10 * time.Millisecond},
		TTFT:    load.Percentiles{P50: 1 * time.Millisecond, P99: 4 * time.Millisecond}}
	r := load.Pair{A: gw, B: direct}.Ratios()
	assert.InDelta(t, 0.8, r.Throughput, 1e-9)
	assert.InDelta(t, 1.5, r.P50, 1e-9)
	assert.InDelta(t, 1.1, r.P99, 1e-9)
	assert.InDelta(t, 1.0, r.AddedP50, 1e-9)
	assert.InDelta(t, 1.0, r.AddedP99, 1e-9)
	assert.InDelta(t, 1.0, r.AddedTTFTP50, 1e-9)
	assert.InDelta(t, 2.0, r.AddedTTFTP99, 1e-9)

	c := load.Comparison{Pairs: []load.Pair{{A: gw, B: direct}, {A: direct, B: direct}, {A: gw, B: gw}}}
	assert.InDelta(t, 1.0, c.Median().Throughput, 1e-9, "median of 0.8, 1, 1")
	assert.InDelta(t, 0.0, c.Median().AddedP50, 1e-9, "median of 1, 0, 0")
}

func TestCheckLoopback(t *testing.T) {
	t.Parallel()
	cases := []struct {
		url string
		ok  bool
	}{
		{"http://127.0.0.1:8000", true},
		{"http://[::1]:8000", true},
		{"http://localhost:8000", true},
		{"http://127.0.0.2:8000", true},
		{"http://10.0.0.1:8000", false},
		{"http://example.com", false},
		{"https://127.0.0.1:8000", false},
		{"127.0.0.1:8000", false},
	}
	for _, tc := range cases {
		t.Run(tc.url, func(t *testing.T) {
			t.Parallel()
			err := load.CheckLoopback(tc.url)
			if tc.ok {
				assert.NoError(t, err)
			} else {
				assert.Error(t, err)
			}
		})
	}
}
