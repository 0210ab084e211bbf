package metrics

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/smg-go/smg/ports"
)

// Engine PD series from engine load reports (seed "Metrics"; smg-spec.md §7.2). Public
// contracts, like names.go.
const (
	NameEnginePDKVTransferLatency = "smg_engine_pd_kv_transfer_latency_ms"
	NameEnginePDKVTransferSpeed   = "smg_engine_pd_kv_transfer_speed_gb_s"
	NameEnginePDPrefillQueue      = "smg_engine_pd_prefill_queue_reqs"
	NameEnginePDDecodeQueue       = "smg_engine_pd_decode_queue_reqs"

	LabelRole   = "role"
	LabelDPRank = "dp_rank"
)

// EnginePDMetrics holds the smg_engine_pd_* gauges {worker, role, dp_rank}; it implements
// ports.EnginePDMetrics. Safe for concurrent use.
type EnginePDMetrics struct {
	latency, speed, prefillQ, decodeQ *prometheus.GaugeVec
}

var _ ports.EnginePDMetrics = (*EnginePDMetrics)(nil)

// NewEnginePDMetrics creates the gauges and registers them on reg; it fails only when reg
// already holds a series of the same name.
func NewEnginePDMetrics(reg *prometheus.Registry) (*EnginePDMetrics, error) {
	g := func(name, help string) *prometheus.GaugeVec {
		return prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: help}, []string{LabelWorker, LabelRole, LabelDPRank})
	}
	m := &EnginePDMetrics{
		latency:  g(NameEnginePDKVTransferLatency, "KV transfer latency reported by the engine, milliseconds."),
		speed:    g(NameEnginePDKVTransferSpeed, "KV transfer speed reported by the engine, GB/s."),
		prefillQ: g(NameEnginePDPrefillQueue, "Requests in the engine's prefill bootstrap and inflight queues."),
		decodeQ:  g(NameEnginePDDecodeQueue, "Requests in the engine's decode prealloc, transfer and retracted queues."),
	}
	for _, c := range []prometheus.Collector{m.latency, m.speed, m.prefillQ, m.decodeQ} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// SetEnginePD sets the four gauges of one worker rank.
func (m *EnginePDMetrics) SetEnginePD(workerURL, role string, l ports.GRPCDisaggLoad) {
	lv := []string{label(workerURL), role, strconv.Itoa(l.DPRank)}
	m.latency.WithLabelValues(lv...).Set(l.KVTransferLatencyMs)
	m.speed.WithLabelValues(lv...).Set(l.KVTransferGBs)
	m.prefillQ.WithLabelValues(lv...).Set(float64(l.PrefillQueueReqs))
	m.decodeQ.WithLabelValues(lv...).Set(float64(l.DecodeQueueReqs))
}

// ForgetEnginePD deletes every series of a worker (it was removed).
func (m *EnginePDMetrics) ForgetEnginePD(workerURL string) {
	l := prometheus.Labels{LabelWorker: label(workerURL)}
	for _, g := range []*prometheus.GaugeVec{m.latency, m.speed, m.prefillQ, m.decodeQ} {
		g.DeletePartialMatch(l)
	}
}
