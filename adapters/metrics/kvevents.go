package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
)

// KVWorkerSeries is one worker's KV-event stream health and cache counters at scrape time.
type KVWorkerSeries struct {
	// Worker is the worker URL (the worker label).
	Worker string
	// Subscribed: the stream series below are exported for this worker.
	Subscribed, Connected, Stalled bool
	// LagSeconds is arrival minus the engine's timestamp of the last batch.
	LagSeconds float64
	// Gaps, Resets and DecodeErrors are counters since the subscription started.
	Gaps, Resets, DecodeErrors uint64
	// HasSeq and LastSeq: the last sequence number applied.
	HasSeq  bool
	LastSeq uint64
	// PredictedCached, EngineCached and EnginePrompt are token counters since start.
	PredictedCached, EngineCached, EnginePrompt uint64
	// SpecConfirmed, SpecExpired and SpecDropped count speculative entries by outcome;
	// SpecConfirmSeconds sums the confirmed ones' ages at confirmation (seconds).
	SpecConfirmed, SpecExpired, SpecDropped uint64
	SpecConfirmSeconds                      float64
}

// kvCollector exports KV-event routing series from a source read at scrape time, so a
// removed worker's series disappear with it.
type kvCollector struct {
	src                                                 func() []KVWorkerSeries
	connected, stalled, lag, gaps, resets, decode, last *prometheus.Desc
	cached, prompt, spec, specAge                       *prometheus.Desc
}

// RegisterKVEvents registers the KV-event routing series on reg, read from src at scrape:
//
//	smg_kv_events_connected{worker}          1 while the worker's event stream is connected
//	smg_kv_events_stalled{worker}            1 while it is stalled (silent with requests routed)
//	smg_kv_events_lag_seconds{worker}        arrival minus engine timestamp of the last batch
//	smg_kv_events_gaps_total{worker}         sequence gaps seen
//	smg_kv_events_resets_total{worker}       times the worker's entries were dropped
//	smg_kv_events_decode_errors_total{worker} undecodable messages
//	smg_kv_events_last_sequence{worker}      last sequence number applied
//	smg_router_kv_cached_tokens_total{worker,source}  cached prompt tokens: source
//	    "predicted" (what cache_aware counted on at selection) or "engine" (what the
//	    prefill reported in its usage afterwards)
//	smg_router_kv_prompt_tokens_total{worker} the prefills' reported prompt tokens
//	smg_router_kv_speculative_total{worker,outcome} speculative entries ended: outcome
//	    "confirmed" (the worker's events stored the prompt), "expired" (not within
//	    --kv-speculative-ttl-secs) or "dropped" (the worker's entries were cleared)
//	smg_router_kv_speculative_confirm_seconds_total{worker} summed age of the confirmed
//	    entries at confirmation (÷ the confirmed count = mean event lag seen by routing)
func RegisterKVEvents(reg prometheus.Registerer, src func() []KVWorkerSeries) error {
	w := []string{"worker"}
	c := &kvCollector{src: src,
		connected: prometheus.NewDesc("smg_kv_events_connected", "1 while the worker's KV-event stream is connected.", w, nil),
		stalled:   prometheus.NewDesc("smg_kv_events_stalled", "1 while the worker's KV-event stream is stalled (silent while requests were routed to it): approximate routing.", w, nil),
		lag:       prometheus.NewDesc("smg_kv_events_lag_seconds", "Arrival minus the engine's timestamp of the last KV-event batch (clock skew included).", w, nil),
		gaps:      prometheus.NewDesc("smg_kv_events_gaps_total", "KV-event sequence gaps seen.", w, nil),
		resets:    prometheus.NewDesc("smg_kv_events_resets_total", "Times the worker's KV-event entries were dropped (unrecovered gap, engine restart).", w, nil),
		decode:    prometheus.NewDesc("smg_kv_events_decode_errors_total", "Undecodable KV-event messages dropped.", w, nil),
		last:      prometheus.NewDesc("smg_kv_events_last_sequence", "Sequence number of the last KV-event batch applied.", w, nil),
		cached: prometheus.NewDesc("smg_router_kv_cached_tokens_total",
			"Cached prompt tokens by source: predicted (cache_aware's match at selection) or engine (the prefill's reported usage).", []string{"worker", "source"}, nil),
		prompt: prometheus.NewDesc("smg_router_kv_prompt_tokens_total", "Prompt tokens the prefills reported, beside their cached tokens.", w, nil),
		spec: prometheus.NewDesc("smg_router_kv_speculative_total",
			"Speculative entries ended, by outcome: confirmed (the worker's events stored the prompt), expired, dropped.", []string{"worker", "outcome"}, nil),
		specAge: prometheus.NewDesc("smg_router_kv_speculative_confirm_seconds_total",
			"Summed age of the confirmed speculative entries at confirmation, seconds.", w, nil),
	}
	return reg.Register(c)
}

func (c *kvCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.connected, c.stalled, c.lag, c.gaps, c.resets, c.decode, c.last, c.cached, c.prompt, c.spec, c.specAge} {
		ch <- d
	}
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

func (c *kvCollector) Collect(ch chan<- prometheus.Metric) {
	for _, s := range c.src() {
		if s.Subscribed {
			ch <- prometheus.MustNewConstMetric(c.connected, prometheus.GaugeValue, b2f(s.Connected), s.Worker)
			ch <- prometheus.MustNewConstMetric(c.stalled, prometheus.GaugeValue, b2f(s.Stalled), s.Worker)
			ch <- prometheus.MustNewConstMetric(c.lag, prometheus.GaugeValue, s.LagSeconds, s.Worker)
			ch <- prometheus.MustNewConstMetric(c.gaps, prometheus.CounterValue, float64(s.Gaps), s.Worker)
			ch <- prometheus.MustNewConstMetric(c.resets, prometheus.CounterValue, float64(s.Resets), s.Worker)
			ch <- prometheus.MustNewConstMetric(c.decode, prometheus.CounterValue, float64(s.DecodeErrors), s.Worker)
			if s.HasSeq {
				ch <- prometheus.MustNewConstMetric(c.last, prometheus.GaugeValue, float64(s.LastSeq), s.Worker)
			}
		}
		ch <- prometheus.MustNewConstMetric(c.cached, prometheus.CounterValue, float64(s.PredictedCached), s.Worker, "predicted")
		ch <- prometheus.MustNewConstMetric(c.cached, prometheus.CounterValue, float64(s.EngineCached), s.Worker, "engine")
		ch <- prometheus.MustNewConstMetric(c.prompt, prometheus.CounterValue, float64(s.EnginePrompt), s.Worker)
		ch <- prometheus.MustNewConstMetric(c.spec, prometheus.CounterValue, float64(s.SpecConfirmed), s.Worker, "confirmed")
		ch <- prometheus.MustNewConstMetric(c.spec, prometheus.CounterValue, float64(s.SpecExpired), s.Worker, "expired")
		ch <- prometheus.MustNewConstMetric(c.spec, prometheus.CounterValue, float64(s.SpecDropped), s.Worker, "dropped")
		ch <- prometheus.MustNewConstMetric(c.specAge, prometheus.CounterValue, s.SpecConfirmSeconds, s.Worker)
	}
}
