package metrics_test

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/adapters/metrics"
)

func newMetrics(t *testing.T) (*metrics.Metrics, *prometheus.Registry) {
	t.Helper()
	reg := metrics.NewRegistry()
	m, err := metrics.New(reg)
	require.NoError(t, err)
	return m, reg
}

func TestConnectorModesStartAtZero(t *testing.T) {
	t.Parallel()
	_, reg := newMetrics(t)
	want := `
# HELP smg_pd_kv_connector_mode_total vLLM PD dispatches by KV connector mode (nixl, mooncake, moriio, passthrough).
# TYPE smg_pd_kv_connector_mode_total counter
smg_pd_kv_connector_mode_total{mode="mooncake"} 0
smg_pd_kv_connector_mode_total{mode="moriio"} 0
smg_pd_kv_connector_mode_total{mode="nixl"} 0
smg_pd_kv_connector_mode_total{mode="passthrough"} 0
`
	require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(want), metrics.NameKVConnectorMode))
}

func TestCountersAndGauges(t *testing.T) {
	t.Parallel()
	m, reg := newMetrics(t)
	m.IncConnectorMode("nixl")
	m.IncConnectorMode("nixl")
	m.IncConnectorMode("passthrough")
	m.IncKVTransferFailure()
	m.IncBootstrapFailure()
	m.IncBootstrapFailure()
	m.IncAdmissionWait()
	m.IncAdmissionShed()
	m.IncAdmissionShed()
	m.IncAdmissionShed()
	m.IncSelection("prefill", "http", "llama", "cache_aware")
	m.IncSelection("decode", "http", "llama", "power_of_two")
	m.IncSelection("decode", "http", "llama", "power_of_two")
	m.AddActive("http://p:8000", 1)
	m.AddActive("http://p:8000", 1)
	m.AddActive("http://p:8000", -1)
	m.SetWorkerHealth("http://p:8000", true)
	m.SetWorkerHealth("http://d:8000", false)
	m.ObserveHealthCheck("prefill", "success")
	m.ObserveHealthCheck("decode", "failure")
	m.ObserveHealthCheck("decode", "failure")

	cases := []struct {
		name   string
		labels []string
		want   string
	}{
		{metrics.NameKVConnectorMode, []string{"mode"}, `mode=mooncake 0;mode=moriio 0;mode=nixl 2;mode=passthrough 1`},
		{metrics.NameKVTransferFailures, nil, `1`},
		{metrics.NameBootstrapFailures, nil, `2`},
		{metrics.NameAdmissionWaits, nil, `1`},
		{metrics.NameAdmissionSheds, nil, `3`},
		{metrics.NameWorkerSelection, []string{"worker_type", "connection_mode", "model", "policy"},
			`worker_type=prefill,connection_mode=http,model=llama,policy=cache_aware 1;worker_type=decode,connection_mode=http,model=llama,policy=power_of_two 2`},
		{metrics.NameWorkerRequestsActive, []string{"worker"}, `worker=http://p:8000 1`},
		{metrics.NameWorkerHealth, []string{"worker"}, `worker=http://d:8000 0;worker=http://p:8000 1`},
		{metrics.NameWorkerHealthChecks, []string{"worker_type", "result"},
			`worker_type=decode,result=failure 2;worker_type=prefill,result=success 1`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, render(t, reg, tc.name, tc.labels))
		})
	}
}

func TestHistogramsUseSpecBucketsAndPDLabels(t *testing.T) {
	t.Parallel()
	m, reg := newMetrics(t)
	m.ObserveTTFT("llama", "sglang", 120*time.Millisecond)
	m.ObservePrefillDuration("llama", "vllm", 2*time.Second)
	m.ObserveKVTransferDuration("llama", "vllm", 3*time.Millisecond)

	for _, tc := range []struct {
		name, runtime string
		sum           float64
		firstBucket   int // index of the first bucket that counts the observation
	}{
		{metrics.NameTTFT, "sglang", 0.12, 6},
		{metrics.NamePrefillDuration, "vllm", 2, 9},
		{metrics.NameKVTransferDuration, "vllm", 0.003, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mf := family(t, reg, tc.name)
			require.Equal(t, dto.MetricType_HISTOGRAM, mf.GetType())
			require.Len(t, mf.GetMetric(), 1)
			got := mf.GetMetric()[0]
			assert.Equal(t, map[string]string{"backend_type": "pd", "model": "llama", "runtime": tc.runtime}, labelMap(got))
			h := got.GetHistogram()
			assert.Equal(t, uint64(1), h.GetSampleCount())
			assert.InDelta(t, tc.sum, h.GetSampleSum(), 1e-9)
			var bounds []float64
			for i, b := range h.GetBucket() {
				bounds = append(bounds, b.GetUpperBound())
				want := uint64(0)
				if i >= tc.firstBucket {
					want = 1
				}
				assert.Equal(t, want, b.GetCumulativeCount(), "bucket le=%g", b.GetUpperBound())
			}
			assert.Equal(t, metrics.DurationBuckets, bounds)
		})
	}
}

func TestModelLabelsAreCapped(t *testing.T) {
	t.Parallel()
	m, reg := newMetrics(t)
	for i := 0; i < metrics.MaxModelLabels+5; i++ {
		m.IncSelection("prefill", "http", "model-"+strconv.Itoa(i), "random")
	}
	m.IncSelection("prefill", "http", "model-0", "random") // a known model keeps its label

	models := map[string]float64{}
	for _, s := range family(t, reg, metrics.NameWorkerSelection).GetMetric() {
		models[labelMap(s)["model"]] = s.GetCounter().GetValue()
	}
	assert.Len(t, models, metrics.MaxModelLabels+1)
	assert.Equal(t, 5.0, models[metrics.ModelOther])
	assert.Equal(t, 2.0, models["model-0"])
	assert.NotContains(t, models, "model-"+strconv.Itoa(metrics.MaxModelLabels))
}

func TestWorkerSeriesFollowRegistration(t *testing.T) {
	t.Parallel()
	m, reg := newMetrics(t)
	m.AddWorker("http://p:8000")
	assert.Equal(t, "worker=http://p:8000 0", render(t, reg, metrics.NameWorkerRequestsActive, []string{"worker"}))
	assert.Equal(t, "worker=http://p:8000 0", render(t, reg, metrics.NameWorkerHealth, []string{"worker"}))
	m.ForgetWorker("http://p:8000")
	assert.Equal(t, "", render(t, reg, metrics.NameWorkerRequestsActive, []string{"worker"}))
	assert.Equal(t, "", render(t, reg, metrics.NameWorkerHealth, []string{"worker"}))
}

func TestRegistryHasRuntimeCollectors(t *testing.T) {
	t.Parallel()
	_, reg := newMetrics(t)
	assert.NotNil(t, family(t, reg, "go_goroutines"))
}

func TestNewFailsOnDoubleRegistration(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	_, err := metrics.New(reg)
	require.NoError(t, err)
	_, err = metrics.New(reg)
	assert.Error(t, err)
}

// family gathers reg and returns the named family (nil when absent).
func family(t *testing.T, reg *prometheus.Registry, name string) *dto.MetricFamily {
	t.Helper()
	mfs, err := reg.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() == name {
			return mf
		}
	}
	return nil
}

func labelMap(m *dto.Metric) map[string]string {
	out := map[string]string{}
	for _, l := range m.GetLabel() {
		out[l.GetName()] = l.GetValue()
	}
	return out
}

// render prints a counter/gauge family as "l1=v1,l2=v2 value;..." in gather order (sorted by
// label values), with the labels in the order given.
func render(t *testing.T, reg *prometheus.Registry, name string, labels []string) string {
	t.Helper()
	mf := family(t, reg, name)
	if mf == nil {
		return ""
	}
	var parts []string
	for _, s := range mf.GetMetric() {
		lm := labelMap(s)
		var kv []string
		for _, l := range labels {
			kv = append(kv, l+"="+lm[l])
		}
		v := s.GetCounter().GetValue()
		if mf.GetType() == dto.MetricType_GAUGE {
			v = s.GetGauge().GetValue()
		}
		val := strconv.FormatFloat(v, 'g', -1, 64)
		if len(kv) == 0 {
			parts = append(parts, val)
			continue
		}
		parts = append(parts, strings.Join(kv, ",")+" "+val)
	}
	return strings.Join(parts, ";")
}

func TestSelectionWithoutModelIsUnknown(t *testing.T) {
	t.Parallel()
	m, reg := newMetrics(t)
	m.IncSelection("decode", "grpc", "", "round_robin")
	want := `
# HELP smg_worker_selection_total Worker picks per leg.
# TYPE smg_worker_selection_total counter
smg_worker_selection_total{connection_mode="grpc",model="unknown",policy="round_robin",worker_type="decode"} 1
`
	require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(want), metrics.NameWorkerSelection))
}
