// Package metrics is the Prometheus adapter: one registry holding the gateway's PD, worker
// and health series (seed "Monitoring"; smg-spec.md §7) plus the Go and process collectors,
// exposed at /metrics on --prometheus-host:--prometheus-port, or on the main port when
// --prometheus-port is 0.
package metrics

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/smg-go/smg/domain/wire"
	"github.com/smg-go/smg/ports"
)

// ConnectorModes are the smg_pd_kv_connector_mode_total{mode} values, pre-initialised to 0 so
// the seed's passthrough-share query has a denominator from start-up.
var ConnectorModes = []string{wire.ModeNixl, wire.ModeMooncake, wire.ModeMoRIIO, wire.ModePassthrough}

// Metrics records every series of the gateway. All methods are safe for concurrent use and
// cheap enough to call on every request. It implements ports.PDMetrics and ports.HealthMetrics.
type Metrics struct {
	reg *prometheus.Registry

	ttft, prefill, kvTransfer *prometheus.HistogramVec

	connectorMode      *prometheus.CounterVec
	kvTransferFailures prometheus.Counter
	bootstrapFailures  prometheus.Counter
	recomputed         *prometheus.CounterVec
	decisions          *prometheus.CounterVec
	admissionWaits     prometheus.Counter
	admissionSheds     prometheus.Counter

	selection    *prometheus.CounterVec
	active       *prometheus.GaugeVec
	health       *prometheus.GaugeVec
	healthChecks *prometheus.CounterVec

	modelsMu sync.RWMutex
	models   map[string]struct{}
}

var (
	_ ports.PDMetrics     = (*Metrics)(nil)
	_ ports.HealthMetrics = (*Metrics)(nil)
)

// NewRegistry returns a registry with the Go runtime and process collectors registered.
func NewRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return reg
}

// New creates the gateway's series and registers them on reg. It fails only when reg already
// holds a series of the same name (a programming error).
func New(reg *prometheus.Registry) (*Metrics, error) {
	pdLabels := []string{LabelBackendType, LabelModel, LabelRuntime}
	hist := func(name, help string) *prometheus.HistogramVec {
		return prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: name, Help: help, Buckets: DurationBuckets}, pdLabels)
	}
	counter := func(name, help string) prometheus.Counter {
		return prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: help})
	}
	m := &Metrics{
		reg:        reg,
		ttft:       hist(NameTTFT, "PD time to first token: prefill dispatch to the first decode output, in seconds."),
		prefill:    hist(NamePrefillDuration, "PD prefill-leg duration in seconds."),
		kvTransfer: hist(NameKVTransferDuration, "PD prefill completion to decode dispatch, in seconds."),
		connectorMode: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: NameKVConnectorMode, Help: "vLLM PD dispatches by KV connector mode (nixl, mooncake, moriio, passthrough).",
		}, []string{LabelMode}),
		kvTransferFailures: counter(NameKVTransferFailures, "KV handoffs that failed: a NIXL prefill returned no kv_transfer_params, or a MoRI-IO pair or handoff check failed."),
		bootstrapFailures:  counter(NameBootstrapFailures, "PD bootstrap failures: an engine reported that the KV handoff of its bootstrap room failed while the peer leg never came (HTTP and gRPC)."),
		recomputed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: NameRecomputedPrompts, Help: "Prompt tokens PD decode workers computed themselves instead of receiving their KV (the decode reported fewer cached tokens than the prompt, by more than one KV page), by decode worker and KV connector.",
		}, []string{LabelDecode, LabelConnector}),
		decisions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: NamePDDecisions, Help: "Selective-PD decisions per request attempt: decision disaggregated, decode_only or prefill_only, and the reason (--selective-pd-*).",
		}, []string{LabelDecision, LabelReason}),
		admissionWaits: counter(NameAdmissionWaits, "PD dispatches admitted after waiting for a decode slot."),
		admissionSheds: counter(NameAdmissionSheds, "PD dispatches shed at the decode admission window."),
		selection: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: NameWorkerSelection, Help: "Worker picks per leg.",
		}, []string{LabelWorkerType, LabelConnectionMode, LabelModel, LabelPolicy}),
		active: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: NameWorkerRequestsActive, Help: "In-flight requests the gateway has on each worker.",
		}, []string{LabelWorker}),
		health: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: NameWorkerHealth, Help: "1 when the worker is ready, else 0.",
		}, []string{LabelWorker}),
		healthChecks: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: NameWorkerHealthChecks, Help: "Worker health probes by result (success, failure).",
		}, []string{LabelWorkerType, LabelResult}),
		models: make(map[string]struct{}),
	}
	for _, c := range []prometheus.Collector{
		m.ttft, m.prefill, m.kvTransfer, m.connectorMode, m.kvTransferFailures, m.bootstrapFailures, m.recomputed, m.decisions,
		m.admissionWaits, m.admissionSheds, m.selection, m.active, m.health, m.healthChecks,
	} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	for _, mode := range ConnectorModes {
		m.connectorMode.WithLabelValues(mode)
	}
	return m, nil
}

// Registry is the registry the series live on (also gathered by /metrics).
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// model caps the distinct model label values at MaxModelLabels; later ones become "other".
func (m *Metrics) model(name string) string {
	m.modelsMu.RLock()
	_, ok := m.models[name]
	n := len(m.models)
	m.modelsMu.RUnlock()
	if ok {
		return name
	}
	if n >= MaxModelLabels {
		return ModelOther
	}
	m.modelsMu.Lock()
	defer m.modelsMu.Unlock()
	if _, ok := m.models[name]; ok {
		return name
	}
	if len(m.models) >= MaxModelLabels {
		return ModelOther
	}
	m.models[name] = struct{}{}
	return name
}

// ObserveTTFT records smg_pd_ttft_seconds{backend_type="pd",model,runtime}.
func (m *Metrics) ObserveTTFT(model, runtime string, d time.Duration) {
	m.ttft.WithLabelValues(BackendTypePD, m.model(model), runtime).Observe(d.Seconds())
}

// ObservePrefillDuration records smg_pd_prefill_duration_seconds{backend_type="pd",model,runtime}.
func (m *Metrics) ObservePrefillDuration(model, runtime string, d time.Duration) {
	m.prefill.WithLabelValues(BackendTypePD, m.model(model), runtime).Observe(d.Seconds())
}

// ObserveKVTransferDuration records smg_pd_kv_transfer_duration_seconds{backend_type="pd",model,runtime}:
// prefill completion to decode dispatch.
func (m *Metrics) ObserveKVTransferDuration(model, runtime string, d time.Duration) {
	m.kvTransfer.WithLabelValues(BackendTypePD, m.model(model), runtime).Observe(d.Seconds())
}

// IncConnectorMode increments smg_pd_kv_connector_mode_total{mode}; mode is one of
// ConnectorModes (wire.Mode*).
func (m *Metrics) IncConnectorMode(mode string) { m.connectorMode.WithLabelValues(mode).Inc() }

// IncKVTransferFailure increments smg_pd_kv_transfer_failures_total.
func (m *Metrics) IncKVTransferFailure() { m.kvTransferFailures.Inc() }

// IncBootstrapFailure increments smg_pd_bootstrap_failures_total.
func (m *Metrics) IncBootstrapFailure() { m.bootstrapFailures.Inc() }

// IncAdmissionWait increments smg_pd_admission_waits_total.
func (m *Metrics) IncAdmissionWait() { m.admissionWaits.Inc() }

// IncAdmissionShed increments smg_pd_admission_sheds_total.
func (m *Metrics) IncAdmissionShed() { m.admissionSheds.Inc() }

// IncSelection increments smg_worker_selection_total{worker_type,connection_mode,model,policy};
// a request without a model (e.g. /generate) counts under model "unknown" (ModelUnknown), as
// the smg_router_* series do.
func (m *Metrics) IncSelection(workerType, connectionMode, model, policy string) {
	if model == "" {
		model = ModelUnknown
	}
	m.selection.WithLabelValues(workerType, connectionMode, m.model(model), policy).Inc()
}

// AddActive adds delta to smg_worker_requests_active{worker=workerURL}.
func (m *Metrics) AddActive(workerURL string, delta float64) {
	m.active.WithLabelValues(label(workerURL)).Add(delta)
}

// ObserveHealthCheck increments smg_worker_health_checks_total{worker_type,result}; result is
// "success" or "failure".
func (m *Metrics) ObserveHealthCheck(workerType, result string) {
	m.healthChecks.WithLabelValues(workerType, result).Inc()
}

// SetWorkerHealth sets smg_worker_health{worker=workerURL} to 1 (ready) or 0.
func (m *Metrics) SetWorkerHealth(workerURL string, healthy bool) {
	v := 0.0
	if healthy {
		v = 1
	}
	m.health.WithLabelValues(label(workerURL)).Set(v)
}

// AddWorker initialises the per-worker series of a newly registered worker
// (smg_worker_requests_active 0, smg_worker_health 0 until its first successful probe), so
// every registered worker appears in /metrics from the start.
func (m *Metrics) AddWorker(workerURL string) {
	m.active.WithLabelValues(label(workerURL))
	m.health.WithLabelValues(label(workerURL))
}

// ForgetWorker deletes the per-worker series of a removed worker so /metrics does not keep
// reporting it.
func (m *Metrics) ForgetWorker(workerURL string) {
	m.active.DeleteLabelValues(label(workerURL))
	m.health.DeleteLabelValues(label(workerURL))
}
