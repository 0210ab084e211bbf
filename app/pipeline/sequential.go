package pipeline

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/smg-go/smg/app/dispatch"
	"github.com/smg-go/smg/domain/wire"
	"github.com/smg-go/smg/domain/worker"
	"github.com/smg-go/smg/ports"
)

// sequential runs vLLM units (grpc.md §1.9; seed "Sequential Dispatch (vLLM)"): each
// prefill first, sanitised to one token and tagged for its connector, then the decode with
// the relayed or synthesized kv_transfer_params. Units run concurrently; the first failure
// cancels the others.
func (pl *Pipeline) sequential(ctx context.Context, units []unit, r *responder) error {
	gctx, fail := context.WithCancelCause(ctx)
	defer fail(nil)
	var wg sync.WaitGroup
	for i := range units {
		wg.Add(1)
		go func(u *unit) {
			defer wg.Done()
			pl.runSequential(gctx, fail, u, r)
		}(&units[i])
	}
	wg.Wait()
	if err := context.Cause(gctx); err != nil && gctx.Err() != nil {
		var f *fault
		if errors.As(err, &f) {
			return f
		}
		if ctx.Err() != nil {
			return dispatch.ContextError(ctx, "during the gRPC PD dispatch")
		}
	}
	return nil
}

// connector modes of a vLLM prefill worker (kv_transfer.rs), the
// smg_pd_kv_connector_mode_total{mode} values.
const (
	modeNixl        = wire.ModeNixl
	modeMooncake    = wire.ModeMooncake
	modePassthrough = wire.ModePassthrough
)

// kvTransferObserver is the optional smg_pd_kv_transfer_duration_seconds recorder of the
// metrics adapter (prefill completion to decode dispatch).
type kvTransferObserver interface {
	ObserveKVTransferDuration(model, runtime string, d time.Duration)
}

func connectorMode(kvConnector string) string {
	switch kvConnector {
	case wire.ConnectorNixl:
		return modeNixl
	case wire.ConnectorMooncake:
		return modeMooncake
	}
	return modePassthrough
}

// mooncakeEngineID is the prefill's effective KV engine id for a Mooncake handoff
// (kv_transfer.rs; grpc.md §1.9): its live engine id; with DP > 1 "{base}_dp{rank}", which
// needs a pinned rank; a dp size label that is not a positive integer fails closed. "" =
// unknown (the decode then gets the legacy typed host and port).
func mooncakeEngineID(p *worker.Live) string {
	base := p.EngineID()
	if base == "" {
		return ""
	}
	dp := 1
	if p.DPSize != nil {
		dp = *p.DPSize
	} else {
		for _, k := range []string{"data_parallel_size", wire.LabelDPSize} {
			if v, ok := p.Label(k); ok {
				n, err := strconv.Atoi(v)
				if err != nil || n < 1 {
					return ""
				}
				dp = n
				break
			}
		}
	}
	if dp <= 1 {
		return base
	}
	if p.DPRank == nil {
		return ""
	}
	return base + "_dp" + strconv.Itoa(*p.DPRank)
}

func (pl *Pipeline) runSequential(gctx context.Context, fail context.CancelCauseFunc, u *unit, r *responder) {
	p := u.pLeg.Worker
	mode := connectorMode(p.KVConnector)
	relay := u.width <= 1
	host := strings.Trim(p.BootstrapHost(), "[]")
	port := DefaultBootstrapPort
	if p.BootstrapPort != nil && *p.BootstrapPort > 0 {
		port = *p.BootstrapPort
	}
	// The prefill leg: one token, no stops, not streamed (kv_transfer.rs).
	pre := u.pLeg
	pre.Stream = false
	s := pre.Sampling
	one := uint32(1)
	s.MaxTokens, s.MinTokens, s.N, s.Stop, s.StopTokenIDs, s.IgnoreEOS = &one, 0, 1, nil, nil, true
	pre.Sampling = s
	pre.Logprobs, pre.TopLogprobs = false, 0 // the client sees only the decode's tokens
	transferID := ""
	switch {
	case relay && mode == modeNixl:
		pre.KVTransferJSON = `{"do_remote_decode":true,"do_remote_prefill":false}`
	case relay && mode == modeMooncake && mooncakeEngineID(p) != "":
		transferID = "xfer-" + pl.newUUID()
		b, _ := json.Marshal(map[string]any{"do_remote_decode": true, "do_remote_prefill": false, "transfer_id": transferID})
		pre.KVTransferJSON = string(b)
	}
	// Each stream's Close cancels its RPC; the legs are not tied to gctx's cancellation.
	legCtx := context.WithoutCancel(gctx)
	harvested := ""
	if !u.local { // a decode-only unit has no prefill leg: the decode prefills itself
		if pl.metrics != nil {
			pl.metrics.IncConnectorMode(mode)
		}
		start := time.Now()
		var ok bool
		harvested, ok = pl.runPrefill(gctx, fail, pre, u, r, legCtx)
		dispatch.PrefillLegEnded(gctx) // its tokens are done, whatever the outcome
		if !ok {
			return
		}
		if pl.metrics != nil {
			pl.metrics.ObservePrefillDuration(r.j.name, string(p.Runtime), time.Since(start))
		}
	}
	dec := u.dLeg
	switch {
	case u.local:
	case relay && mode == modeMooncake && transferID != "":
		b, _ := json.Marshal(map[string]any{"do_remote_decode": false, "do_remote_prefill": true, "transfer_id": transferID,
			"remote_engine_id": mooncakeEngineID(p), "remote_bootstrap_addr": "http://" + net.JoinHostPort(host, strconv.Itoa(port))})
		dec.KVTransferJSON = string(b)
	case mode == modeMooncake:
		dec.KVHost, dec.KVPort = host, port
	case relay && harvested != "":
		dec.KVTransferJSON = harvested
	case relay && mode == modeNixl:
		if pl.metrics != nil {
			pl.metrics.IncKVTransferFailure()
		}
		pl.log.WarnContext(gctx, "NIXL prefill returned no kv_transfer_params; the decode recomputes the prompt",
			"prefill", p.DisplayURL(), "engine_request_id", pre.RequestID)
	}
	handed := dec.KVTransferJSON != "" || dec.KVPort != 0 // the decode loads the prefill's KV
	if pl.log.Enabled(gctx, slog.LevelDebug) {            // the HTTP dispatcher's "vLLM PD pair" line
		pl.log.DebugContext(gctx, "vLLM PD pair", "prefill", p.DisplayURL(), "decode", dec.Worker.DisplayURL(), "mode", mode,
			"transfer_id", transferID, "params_relayed", dec.KVTransferJSON != "", "legacy_bootstrap", dec.KVPort != 0)
	}
	// The prefill's success waits, when it handed off KV, for the decode's first item: a
	// decode failing to load that KV first may turn it into the prefill's failure
	// (kvLoadFault takes it then).
	prefillOK, answered := http.StatusOK, time.Now()
	if u.local {
		prefillOK = 0 // no prefill leg, no outcome to record
	}
	releasePrefill := func() {
		if prefillOK != 0 && !p.FailedSince(answered) { // not when it died after answering
			pl.record(p, prefillOK)
		}
		prefillOK = 0
	}
	defer releasePrefill()
	if !handed {
		releasePrefill()
	}
	pl.relayIdentity(&dec, u, relay)
	if stripped(dec.MM) && dec.KVTransferJSON == "" && dec.KVPort == 0 {
		fail(missingKV(pre))
		return
	}
	prefilledAt := time.Now()
	dst, err := pl.gen.Generate(legCtx, dec)
	if err != nil {
		fail(pl.decodeFault(gctx, dec, err, false, handed, p, &prefillOK, answered))
		return
	}
	if o, ok := pl.metrics.(kvTransferObserver); ok {
		o.ObserveKVTransferDuration(r.j.name, string(p.Runtime), time.Since(prefilledAt))
	}
	stop := make(chan struct{})
	dch := reader(dst, stop, aheadOf(dec))
	first, completed, cacheNoted := false, false, false
	items := 0 // messages the decode sent
	dtC, dtT := deadline(pl.legDeadline("decode", dec))
	defer stopTimer(dtT)
	for {
		if len(dch) == 0 {
			r.flushIdle() // nothing waiting: what the events so far wrote leaves now
		}
		select {
		case <-dtC:
			dtC = nil
			fail(pl.timeoutFault("decode", dec))
		case it := <-dch:
			switch {
			case it.err == io.EOF && !completed:
				fail(pl.endedEarly(gctx, "decode", dec, items))
				close(stop)
				dst.Close()
				return
			case it.err == io.EOF:
				pl.record(dec.Worker, http.StatusOK)
				close(stop)
				dst.Close()
				return
			case it.err != nil:
				if !completed {
					fail(pl.decodeFault(gctx, dec, it.err, first, handed, p, &prefillOK, answered))
				}
				close(stop)
				dst.Close()
				return
			case completed:
				continue
			}
			items++
			if f := pl.outOfVocab(gctx, r.j, dec, it.ev); f != nil {
				releasePrefill() // the prefill's handoff reached a decode that answered
				fail(f)
				close(stop)
				pl.retire(dec, dst)
				return
			}
			if !first {
				releasePrefill()
				pl.observeDecodeTTFT(gctx, r.j, prefilledAt)
			}
			first, dtC = true, nil
			if empty(it.ev) {
				continue
			}
			switch {
			case it.ev.Complete && u.local:
				// Decode-only: no prefill result; the decode's complete carries the prompt's
				// counts (prompt, cached tokens, prompt logprobs) the usage describes, and
				// computing the prompt there is no recompute.
				r.prefilled(u, it.ev)
			case it.ev.Complete && !cacheNoted:
				cacheNoted = true
				pl.noteDecodeCache(gctx, u, it.ev)
			}
			if r.event(u, it.ev) {
				if it.ev.Complete {
					completed = true // read on to the stream's end
					continue
				}
				// A gateway stop ended the samples; the engine is still generating.
				pl.record(dec.Worker, http.StatusOK)
				close(stop)
				pl.retire(dec, dst)
				return
			}
		case <-gctx.Done():
			if completed {
				close(stop)
				dst.Close()
				return
			}
			if !first && !isFault(context.Cause(gctx)) {
				pl.deferAbort(dec, dst, dch, stop)
				return
			}
			pl.retire(dec, dst)
			close(stop)
			return
		}
	}
}

// runPrefill runs the one-token vLLM prefill to its end and returns the kv_transfer_params
// it handed back ("" = none). ok is false when it failed or the group ended; on success the
// caller records the prefill's outcome.
func (pl *Pipeline) runPrefill(gctx context.Context, fail context.CancelCauseFunc, pre ports.GRPCLeg, u *unit, r *responder, legCtx context.Context) (string, bool) {
	pst, err := pl.gen.Generate(legCtx, pre)
	if err != nil {
		fail(pl.legFault(gctx, "prefill", pre, err, false))
		return "", false
	}
	stop := make(chan struct{})
	defer close(stop)
	pch := reader(pst, stop, 1)
	harvested, complete, items := "", false, 0
	ptC, ptT := deadline(pl.legDeadline("prefill", pre))
	defer stopTimer(ptT)
	for {
		select {
		case <-ptC:
			pl.retire(pre, pst)
			fail(pl.timeoutFault("prefill", pre))
			return "", false
		case it := <-pch:
			switch {
			case it.err == io.EOF && !complete:
				pst.Close()
				fail(pl.endedEarly(gctx, "prefill", pre, items))
				return "", false
			case it.err == io.EOF:
				pst.Close()
				return harvested, true // its success is the caller's to record
			case it.err != nil:
				pst.Close()
				fail(pl.legFault(gctx, "prefill", pre, it.err, false))
				return "", false
			case it.ev.Complete:
				items++
				complete = true
				r.prefilled(u, it.ev)
				if pl.cachedTokens != nil { // the vLLM prefill's usage, as the parallel path reports it
					pl.cachedTokens(pre.Worker.URL, it.ev.PromptTokens, it.ev.CachedTokens)
				}
				if harvested == "" {
					harvested = it.ev.KVTransferJSON
				}
				if it.ev.MediaIdentity != nil {
					u.identity = it.ev.MediaIdentity
				}
			default:
				items++
			}
		case <-gctx.Done():
			pl.retire(pre, pst)
			return "", false
		}
	}
}
