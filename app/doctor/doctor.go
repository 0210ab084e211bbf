// Package doctor explains, before traffic, each reason a PD fleet would serve requests
// badly: legs that pair with nothing (and which components differ), vLLM workers without a
// KV connector (decode recomputes every prompt), Mooncake prefills without an engine id,
// SGLang prefills without a reachable bootstrap port, workers that are not ready, workers that
// fail a health probe of their own, and what a gRPC servicer silently does not do (no KV
// layout reported, data_parallel_rank ignored). It works on the workers a gateway reports (GET /workers),
// and probes each of them itself, so a worker that died since the gateway's last probe is seen;
// given a pair prober (the gateway's POST /workers/probe-pair) it also names the pairs whose
// decode recomputes the prompt.
package doctor

import (
	"context"
	"fmt"
	"net"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/smg-go/smg/domain/pairing"
	"github.com/smg-go/smg/domain/wire"
	"github.com/smg-go/smg/domain/worker"
)

// Finding kinds (the JSON "kind" field). Each names one way requests would be served badly.
const (
	KindUnpairable           = "unpairable_leg"
	KindPassthrough          = "vllm_passthrough"
	KindMooncakeNoEngineID   = "mooncake_without_engine_id"
	KindNoBootstrapPort      = "sglang_prefill_without_bootstrap_port"
	KindBootstrapUnreachable = "bootstrap_port_unreachable"
	KindNotReady             = "worker_not_ready"
	KindMissingRole          = "no_workers_of_role"
	KindNixlNoParams         = "nixl_prefill_returns_no_kv_transfer_params"
	KindNixlProbeFailed      = "nixl_probe_failed"
	KindNixlNotProbedGRPC    = "nixl_not_probed_over_grpc"
	KindContextMismatch      = "context_length_mismatch"
)

// Severities: an error breaks or silently degrades requests; a warning is a state that may
// pass (a worker still starting); a note reports a check that was not made (it never fails
// the doctor's exit code).
const (
	SeverityError   = "error"
	SeverityWarning = "warning"
	SeverityNote    = "note"
)

// Finding is one problem, about one worker when WorkerID is set.
type Finding struct {
	Kind     string `json:"kind"`
	Severity string `json:"severity"`
	WorkerID string `json:"worker_id,omitempty"`
	URL      string `json:"url,omitempty"`
	Role     string `json:"worker_type,omitempty"`
	// Tenant names the tenant a tenant finding is about.
	Tenant string `json:"tenant,omitempty"`
	// PrefillID, PrefillURL, DecodeID and DecodeURL name the pair a pair finding is about
	// (KindPairRecomputes, KindPairProbeFailed, KindPairProbeUnmeasured).
	PrefillID  string `json:"prefill_id,omitempty"`
	PrefillURL string `json:"prefill_url,omitempty"`
	DecodeID   string `json:"decode_id,omitempty"`
	DecodeURL  string `json:"decode_url,omitempty"`
	Message    string `json:"message"`
}

// Options configure Check. Dial nil uses net.Dialer with Timeout (default 2 s).
type Options struct {
	Mode    pairing.Mode
	Timeout time.Duration
	Dial    func(ctx context.Context, network, addr string) (net.Conn, error)
	// ProbeNixl, when set, sends one real prefill request tagged as the gateway tags NIXL
	// prefills to a vLLM NixlConnector prefill, and reports whether the answer carried
	// kv_transfer_params (err: the request itself failed). nil skips the probe (it costs a
	// one-token prefill and holds its KV blocks until the engine's abort timeout). The probe
	// is an HTTP request: gRPC workers are not probed (a KindNixlNotProbedGRPC note).
	ProbeNixl func(ctx context.Context, w worker.Worker) (hasParams bool, err error)
	// ProbeHealth, when set, probes one worker's health directly (the gateway's HTTP health
	// endpoint or the engine's gRPC HealthCheck) and returns nil iff it is healthy. Every
	// worker is probed at once, each bounded by HealthTimeout (default Timeout); a failure
	// is a KindHealthProbeFailed error. nil skips the probe.
	ProbeHealth   func(ctx context.Context, w worker.Worker) error
	HealthTimeout time.Duration
	// ProbePair, when set, runs one request through exactly the pair p, d (the gateway's
	// POST /workers/probe-pair) and returns what it showed (err: the probe could not be
	// run). Each compatible pair is probed, at most MaxPairs (0: DefaultMaxPairs),
	// PairConcurrency at once, each bounded by PairTimeout: KindPairRecomputes,
	// KindPairProbeFailed, KindPairProbeUnmeasured, KindPairsNotProbed. nil skips it (each
	// probe costs one real request on the pair).
	ProbePair func(ctx context.Context, p, d worker.Worker) (PairProbe, error)
	MaxPairs  int
	// PairTimeout bounds each pair probe (0: Timeout). A probe runs a real request through
	// the gateway's deadlines, so it should outlast the gateway's stall bound for a hung
	// leg to come back as the gateway's own verdict (504 decode_timeout), not as a probe
	// that could not be run.
	PairTimeout time.Duration
	// Draining holds the ids of the workers the gateway lists as draining: pairs with one are
	// not probed (the gateway refuses to put a new request on a draining worker), and the
	// KindPairsNotProbed note counts them.
	Draining map[string]bool
}

// Check inspects ws (the fleet as the gateway registered it) and returns the findings in a
// stable order: by worker registration order, then kind. An empty result means no known
// reason for bad service was found.
func Check(ctx context.Context, ws []worker.Worker, o Options) []Finding {
	if o.Timeout <= 0 {
		o.Timeout = 2 * time.Second
	}
	if o.PairTimeout <= 0 {
		o.PairTimeout = o.Timeout
	}
	if o.HealthTimeout <= 0 {
		o.HealthTimeout = o.Timeout
	}
	if o.Dial == nil {
		d := &net.Dialer{Timeout: o.Timeout}
		o.Dial = d.DialContext
	}
	var out []Finding
	var prefills, decodes []*worker.Live
	for _, w := range ws {
		switch w.Role {
		case worker.RolePrefill:
			prefills = append(prefills, worker.NewLive(w, worker.StatusReady))
		case worker.RoleDecode:
			decodes = append(decodes, worker.NewLive(w, worker.StatusReady))
		}
	}
	if len(prefills) == 0 {
		out = append(out, Finding{Kind: KindMissingRole, Severity: SeverityError, Role: string(worker.RolePrefill),
			Message: "no prefill worker is registered: every PD request fails with 503"})
	}
	if len(decodes) == 0 {
		out = append(out, Finding{Kind: KindMissingRole, Severity: SeverityError, Role: string(worker.RoleDecode),
			Message: "no decode worker is registered: every PD request fails with 503"})
	}
	out = append(out, unpairable(prefills, decodes, o.Mode)...)
	out = append(out, contextMismatch(prefills, decodes, o.Mode)...)
	for _, w := range ws {
		out = append(out, perWorker(ctx, w, o)...)
		out = append(out, servicerGaps(w)...)
	}
	out = append(out, probeHealth(ctx, ws, o)...)
	out = append(out, capable(ws, decodeOnlyShape)...)
	out = append(out, capable(ws, prefillOnlyShape)...)
	order := map[string]int{}
	for i, w := range ws {
		order[w.ID] = i + 1
	}
	sort.SliceStable(out, func(i, j int) bool { return order[out[i].WorkerID] < order[out[j].WorkerID] })
	return append(out, probePairs(ctx, prefills, decodes, o)...) // in pair order, after the workers
}

// unpairable names every prefill with no compatible decode and every decode no prefill can
// use, with the components that differ from each candidate on the other side.
func unpairable(prefills, decodes []*worker.Live, m pairing.Mode) []Finding {
	if len(prefills) == 0 || len(decodes) == 0 {
		return nil
	}
	var out []Finding
	used := map[*worker.Live]bool{}
	mx := pairing.NewMatrix(prefills, decodes, m)
	for _, p := range prefills {
		ds := mx.CompatibleDecodes(p)
		for _, d := range ds {
			used[d] = true
		}
		if len(ds) == 0 {
			out = append(out, Finding{Kind: KindUnpairable, Severity: SeverityError, WorkerID: p.ID, URL: p.URL, Role: string(p.Role),
				Message: fmt.Sprintf("prefill %s (pairing key %s) pairs with no decode under --pd-pairing-mode %s: %s",
					p.ID, pairing.Key(pairing.Describe(p.Worker)), m, diffsAgainst(p, decodes, m, true))})
		}
	}
	for _, d := range decodes {
		if used[d] {
			continue
		}
		out = append(out, Finding{Kind: KindUnpairable, Severity: SeverityError, WorkerID: d.ID, URL: d.URL, Role: string(d.Role),
			Message: fmt.Sprintf("decode %s (pairing key %s) pairs with no prefill under --pd-pairing-mode %s: %s",
				d.ID, pairing.Key(pairing.Describe(d.Worker)), m, diffsAgainst(d, prefills, m, false))})
	}
	return out
}

// diffsAgainst lists, per worker on the other side, the components that differ:
// "vs prefill p0: transport (nixl ≠ mooncake)".
func diffsAgainst(w *worker.Live, others []*worker.Live, m pairing.Mode, isPrefill bool) string {
	var parts []string
	self := pairing.Describe(w.Worker)
	for _, o := range others {
		other := pairing.Describe(o.Worker)
		p, d := self, other
		if !isPrefill {
			p, d = other, self
		}
		_, diffs := pairing.Compatible(p, d, m)
		var ds []string
		for _, c := range diffs {
			ds = append(ds, fmt.Sprintf("%s (%s ≠ %s)", c, component(self, c), component(other, c)))
		}
		parts = append(parts, fmt.Sprintf("vs %s %s: %s", o.Role, o.ID, strings.Join(ds, ", ")))
	}
	return strings.Join(parts, "; ")
}

// component is a descriptor's value for a diff component, "?" when unknown.
func component(d pairing.Descriptor, c string) string {
	v := ""
	switch c {
	case pairing.ComponentProtocol:
		v = d.Protocol
	case pairing.ComponentRuntime:
		v = d.Runtime
	case pairing.ComponentTransport:
		v = d.Transport
	case pairing.ComponentKVCacheDtype:
		v = d.Layout.KVCacheDtype
	case pairing.ComponentPageSize:
		v = d.Layout.PageSize
	case pairing.ComponentAttentionBackend:
		v = d.Layout.AttentionBackend
	case pairing.ComponentModelDtype:
		v = d.Layout.ModelDtype
	case pairing.ComponentVersion:
		v = d.Version
	}
	if v == "" {
		return pairing.Unknown
	}
	return v
}

// perWorker are the checks of one worker on its own.
func perWorker(ctx context.Context, w worker.Worker, o Options) []Finding {
	var out []Finding
	f := func(kind, sev, msg string) {
		out = append(out, Finding{Kind: kind, Severity: sev, WorkerID: w.ID, URL: w.URL, Role: string(w.Role), Message: msg})
	}
	pd := w.Role == worker.RolePrefill || w.Role == worker.RoleDecode
	connector := strings.TrimSpace(w.KVConnector)
	if connector == "" {
		connector = w.Labels[wire.LabelKVConnector]
	}
	if pd && w.Runtime == worker.RuntimeVLLM {
		switch connector {
		case wire.ConnectorNixl, wire.ConnectorMooncake, wire.ConnectorMoRIIO:
		default:
			what := "no kv_connector"
			if connector != "" {
				what = "kv_connector " + strconv.Quote(connector) + " (not NixlConnector, MooncakeConnector or MoRIIOConnector)"
			}
			f(KindPassthrough, SeverityError, fmt.Sprintf("vLLM %s %s runs passthrough: %s, so no KV cache is handed over and decode recomputes every prompt; register it with its kv_connector",
				w.Role, w.ID, what))
		}
	}
	probe := o.ProbeNixl != nil && w.Role == worker.RolePrefill && w.Runtime == worker.RuntimeVLLM && connector == wire.ConnectorNixl
	if probe && isGRPC(w) {
		probe = false
		f(KindNixlNotProbedGRPC, SeverityNote, fmt.Sprintf("NIXL prefill %s not probed over gRPC: the probe request is an HTTP /v1/completions, and on the gRPC path the gateway reads kv_transfer_params from the engine's Generate answer itself", w.ID))
	}
	if probe {
		pctx, cancel := context.WithTimeout(ctx, o.Timeout)
		ok, err := o.ProbeNixl(pctx, w)
		cancel()
		switch {
		case err != nil:
			f(KindNixlProbeFailed, SeverityError, fmt.Sprintf("NIXL prefill %s: the probe request failed (%v)", w.ID, oneLine(err)))
		case !ok:
			f(KindNixlNoParams, SeverityError, fmt.Sprintf("NIXL prefill %s answered a probe request without kv_transfer_params: decode would recompute every prompt (an outdated vLLM, or a worker started without --kv-transfer-config)", w.ID))
		}
	}
	if w.Role == worker.RolePrefill && connector == wire.ConnectorMooncake && strings.TrimSpace(w.KVEngineID) == "" {
		f(KindMooncakeNoEngineID, SeverityError, fmt.Sprintf("Mooncake prefill %s has no kv_engine_id: the gateway cannot mint Mooncake handoffs over HTTP, so decode recomputes the prompt; register it with kv_engine_id", w.ID))
	}
	if w.Role == worker.RolePrefill && w.Runtime == worker.RuntimeSGLang {
		if w.BootstrapPort == nil {
			f(KindNoBootstrapPort, SeverityError, fmt.Sprintf("SGLang prefill %s has no bootstrap port: decode cannot fetch the KV cache; give --prefill <url> <port> or bootstrap_port", w.ID))
		} else {
			addr := net.JoinHostPort(w.BootstrapHost(), strconv.Itoa(*w.BootstrapPort))
			dctx, cancel := context.WithTimeout(ctx, o.Timeout)
			conn, err := o.Dial(dctx, "tcp", addr)
			cancel()
			if err != nil {
				f(KindBootstrapUnreachable, SeverityError, fmt.Sprintf("SGLang prefill %s: bootstrap port %d does not accept connections from here (%v); decode workers could not fetch the KV cache",
					w.ID, *w.BootstrapPort, oneLine(err)))
			} else {
				_ = conn.Close()
			}
		}
	}
	return out
}

// NotReady is the finding for a worker whose status is not ready (status as GET /workers
// shows it).
func NotReady(w worker.Worker, status string) Finding {
	return Finding{Kind: KindNotReady, Severity: SeverityWarning, WorkerID: w.ID, URL: w.URL, Role: string(w.Role),
		Message: fmt.Sprintf("%s %s is %s: it receives no traffic", w.Role, w.ID, status)}
}

// isGRPC reports a worker served over gRPC: its connection mode, or its URL's grpc:// or
// grpcs:// scheme when the listing gave no mode.
func isGRPC(w worker.Worker) bool {
	if w.Mode == worker.ConnGRPC {
		return true
	}
	m, err := worker.ValidateURL(w.URL)
	return err == nil && m == worker.ConnGRPC
}

func oneLine(err error) string { return strings.Join(strings.Fields(err.Error()), " ") }

// contextLength is the context window a worker reports (SGLang context_length, vLLM
// max_model_len labels from detection), 0 when unknown.
func contextLength(w worker.Worker) int64 {
	for _, k := range []string{"context_length", "max_model_len"} {
		if v, err := strconv.ParseInt(strings.TrimSpace(w.Labels[k]), 10, 64); err == nil && v > 0 {
			return v
		}
	}
	return 0
}

// contextMismatch names each compatible pair whose legs report different context windows:
// a prompt longer than the smaller one is computed on one leg and refused by the other.
func contextMismatch(prefills, decodes []*worker.Live, m pairing.Mode) []Finding {
	if len(prefills) == 0 || len(decodes) == 0 {
		return nil
	}
	var out []Finding
	mx := pairing.NewMatrix(prefills, decodes, m)
	for _, p := range prefills {
		pc := contextLength(p.Worker)
		if pc == 0 {
			continue
		}
		for _, d := range mx.CompatibleDecodes(p) {
			if dc := contextLength(d.Worker); dc != 0 && dc != pc {
				out = append(out, Finding{Kind: KindContextMismatch, Severity: SeverityError, WorkerID: p.ID, URL: p.URL, Role: string(p.Role),
					Message: fmt.Sprintf("prefill %s (context %d tokens) pairs with decode %s (context %d tokens): prompts longer than %d tokens fail on one leg after the other did the work",
						p.ID, pc, d.ID, dc, min(pc, dc))})
			}
		}
	}
	return out
}
