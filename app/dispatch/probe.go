package dispatch

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"github.com/smg-go/smg/domain/errs"
	"github.com/smg-go/smg/domain/handoff"
	"github.com/smg-go/smg/domain/pairing"
	"github.com/smg-go/smg/domain/policy"
	"github.com/smg-go/smg/domain/wire"
	"github.com/smg-go/smg/domain/worker"
	"github.com/smg-go/smg/ports"
)

// probeFiller makes the probe's prompt span several KV pages (a few hundred tokens in any
// tokenizer), so that a recompute exceeds the one-page tolerance of
// handoff.RecomputedTokens on engines with pages of up to 64 tokens.
var probeFiller = strings.Repeat("the gateway checks that this prefill hands its KV cache to this decode ", 24)

// probeBodyLimit bounds the probe answer kept (a one-token completion is far below it).
const probeBodyLimit = 1 << 20

// ProbePair runs one non-streaming one-token /v1/completions request through exactly the
// pair prefill, decode (worker ids or URLs), the way a client request on that pair would be
// run (dispatchPair: the gRPC pipeline, MoRI-IO, vLLM's sequential handoff or SGLang's
// parallel dispatch), and reports what the silent-recompute detector read from the decode's
// usage. The prompt starts with a fresh id, so no engine's prefix cache can serve it.
//
// The probe is a real request: a recompute it shows is counted in
// smg_pd_recomputed_prompts_total and may be logged at WARN like any other (the decode did
// recompute), its legs' outcomes reach the circuit breakers (a failure that either leg may
// have caused is not charged: no retry settles it), and it takes a decode
// admission slot. It bypasses selection and the retry loop (no other pair is tried) and the
// tenants' budgets. Errors: 404 WORKER_NOT_FOUND, 400 BAD_REQUEST for a worker of the wrong
// role, a draining worker, or a pair --pd-pairing-mode refuses.
func (d *Dispatcher) ProbePair(ctx context.Context, prefill, decode string) (ports.PairProbeResult, error) {
	p, err := d.probeWorker(prefill, worker.RolePrefill)
	if err != nil {
		return ports.PairProbeResult{}, err
	}
	dc, err := d.probeWorker(decode, worker.RoleDecode)
	if err != nil {
		return ports.PairProbeResult{}, err
	}
	if m, err := pairing.ParseMode(d.cfg.PairingMode); err == nil {
		if ok, diffs := pairing.Compatible(pairing.Describe(p.Worker), pairing.Describe(dc.Worker), m); !ok {
			return ports.PairProbeResult{}, errs.New(http.StatusBadRequest, wire.CodeWorkerBadRequest,
				"prefill %s and decode %s do not pair under --pd-pairing-mode %s (differ in %s)", p.ID, dc.ID, m, strings.Join(diffs, ", "))
		}
	}
	res := ports.PairProbeResult{PrefillID: p.ID, PrefillURL: p.DisplayURL(), DecodeID: dc.ID, DecodeURL: dc.DisplayURL(),
		Connector: RecomputeConnector(p)}
	model := ""
	if len(dc.Models) > 0 {
		model = dc.Models[0]
	} else if len(p.Models) > 0 {
		model = p.Models[0]
	}
	fields := map[string]any{"prompt": "smg-probe " + d.newUUID() + " " + probeFiller, "max_tokens": 1, "stream": false, "temperature": 0}
	if model != "" {
		fields["model"] = model
	}
	body, _ := json.Marshal(fields)
	rq, err := handoff.Inspect(handoff.RouteCompletions, body)
	if err != nil {
		return res, err
	}
	timeout := d.cfg.RequestTimeout
	if timeout <= 0 {
		timeout = time.Minute
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	ctx, obs := observeRecompute(ctx)
	hdr := http.Header{}
	hdr.Set("Content-Type", "application/json")
	w := &probeWriter{header: http.Header{}}
	start := time.Now()
	_, err = d.dispatchPair(ctx, w, rq, &policy.Request{Model: model}, p, dc, hdr)
	res.ElapsedMS = time.Since(start).Milliseconds()
	if err != nil {
		if f := faultOf(err); f != nil && !f.ambiguous {
			d.recordFault(f) // an ambiguous fault is left unsettled: no retry tells which leg it was
		}
		e, ok := errs.As(err)
		if !ok {
			e = errs.New(http.StatusInternalServerError, "internal_error", "%s", err.Error())
		}
		res.Outcome, res.Status, res.ErrorCode, res.Error = ports.PairProbeFailed, e.Status, e.Code, e.Message
		return res, nil
	}
	res.Status = w.status
	if w.status < 200 || w.status > 299 {
		res.Outcome, res.ErrorCode = ports.PairProbeFailed, w.header.Get(wire.HeaderErrorCode)
		res.Error = upstreamMessage(w.body.Bytes())
		return res, nil
	}
	seen, prompt, cached, n := obs.get()
	switch {
	case !seen:
		res.Outcome = ports.PairProbeUnmeasured
	case n > 0:
		res.Outcome = ports.PairProbeRecomputed
	default:
		res.Outcome = ports.PairProbeKVReceived
	}
	res.Measured, res.PromptTokens, res.CachedTokens, res.RecomputedTokens = seen, prompt, cached, n
	return res, nil
}

// probeWorker finds a registered worker by id or URL and checks its role.
func (d *Dispatcher) probeWorker(ref string, role worker.Role) (*worker.Live, error) {
	ref = strings.TrimRight(strings.TrimSpace(ref), "/")
	if ref == "" {
		return nil, errs.New(http.StatusBadRequest, wire.CodeWorkerBadRequest, "a %s worker id or URL is required", role)
	}
	l, err := d.store.Get(ref)
	if err != nil {
		if l, err = d.store.GetByURL(ref); err != nil {
			return nil, errs.New(http.StatusNotFound, wire.CodeWorkerNotFound, "Worker %s not found", ref)
		}
	}
	if l.Role != role {
		return nil, errs.New(http.StatusBadRequest, wire.CodeWorkerBadRequest, "worker %s is a %s worker, not a %s", l.ID, l.Role, role)
	}
	if l.Status() == worker.StatusDraining {
		// Draining is an operator's decision to let the worker empty: a probe would put a
		// new request (and, on a decode, new KV) on it.
		return nil, errs.New(http.StatusBadRequest, wire.CodeWorkerBadRequest, "worker %s is draining: it takes no new requests, probes included", l.ID)
	}
	return l, nil
}

// probeWriter is the probe's http.ResponseWriter: it keeps the status and up to
// probeBodyLimit bytes of the answer.
type probeWriter struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (w *probeWriter) Header() http.Header { return w.header }

func (w *probeWriter) WriteHeader(status int) {
	if w.status == 0 {
		w.status = status
	}
}

func (w *probeWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	if room := probeBodyLimit - w.body.Len(); room > 0 {
		w.body.Write(b[:min(len(b), room)])
	}
	return len(b), nil
}

// Flush is a no-op: nothing is relayed to a client.
func (w *probeWriter) Flush() {}

var _ ports.PairProber = (*Dispatcher)(nil)
