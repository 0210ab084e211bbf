package pipeline

import (
	"context"
	"net/http"
	"strings"
	"time"

	"github.com/smg-go/smg/adapters/engine/grpcengine"
	"github.com/smg-go/smg/app/dispatch"
	"github.com/smg-go/smg/domain/errs"
	"github.com/smg-go/smg/domain/wire"
	"github.com/smg-go/smg/domain/worker"
	"github.com/smg-go/smg/ports"
)

// EngineIDReader re-reads a worker's KV engine id (grpcengine.Pool: vLLM GetServerInfo
// kv_engine_id; "" when the engine reports none), bounded by ctx.
type EngineIDReader interface {
	EngineID(ctx context.Context, w worker.Worker) (string, error)
}

// engineIDReadTimeout bounds the re-read of a prefill's engine id after a decode named it
// stale: the retry waits for it.
const engineIDReadTimeout = 2 * time.Second

// staleEngineID reports whether a decode's error names the remote_engine_id of a Mooncake
// handoff: the decode's KV pull was refused because the prefill it was told about is no
// longer that engine (a vLLM prefill restarted on its URL gets a new engine id; the
// prefill's side channel answers 409 naming remote_engine_id).
func staleEngineID(err error) bool {
	return err != nil && strings.Contains(err.Error(), wire.KVRemoteEngineID)
}

// decodeFault is the fault of a vLLM decode leg that failed before (first false) or after
// its first item. A Mooncake decode refused for a stale remote_engine_id is the prefill's
// stale fact: the prefill is charged (502 prefill_kv_transfer_failed, retried), its held
// success dropped, and its engine id re-read before the retry, which then mints the
// handoff with the new id. Anything else is kvLoadFault's.
func (pl *Pipeline) decodeFault(ctx context.Context, dec ports.GRPCLeg, err error, first, handed bool, p *worker.Live, prefillOK *int, answered time.Time) *fault {
	if first || !handed || p.KVConnector != wire.ConnectorMooncake || !staleEngineID(err) {
		return kvLoadFault(pl.legFault(ctx, "decode", dec, err, first), handed, first, p, prefillOK, answered)
	}
	*prefillOK = 0
	stale := p.EngineID()
	pl.refreshEngineID(ctx, p)
	_, msg := grpcengine.ErrorStatus(err)
	pl.log.WarnContext(ctx, "decode refused the prefill's KV engine id; charging the prefill and re-reading its server info",
		"prefill", p.DisplayURL(), "decode", dec.Worker.DisplayURL(), "engine_request_id", dec.RequestID,
		"stale_engine_id", stale, "engine_id", p.EngineID(), "err", msg)
	e := &errs.Error{Status: http.StatusBadGateway, Code: wire.CodePrefillKVTransferFailed, Leg: "prefill", Retryable: true,
		Message: "decode worker " + dec.Worker.ID + " refused the KV engine id " + stale + " of prefill worker " + p.ID +
			" (the prefill restarted?): " + msg}
	return &fault{err: dispatch.LegFault(e, p, http.StatusBadGateway, nil), w: p, status: http.StatusBadGateway}
}

// refreshEngineID re-reads p's KV engine id now (bounded by engineIDReadTimeout) and
// applies a changed one, logged at INFO with the old and new values; a failed read leaves
// it unconfirmed, so the next health probe reads it again.
func (pl *Pipeline) refreshEngineID(ctx context.Context, p *worker.Live) {
	if pl.facts != nil {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), engineIDReadTimeout)
		defer cancel()
		pl.facts(rctx, p)
		return
	}
	if pl.engineIDs == nil {
		p.SetEngineIDConfirmed(false)
		return
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), engineIDReadTimeout)
	defer cancel()
	id, err := pl.engineIDs.EngineID(rctx, p.Worker)
	switch {
	case err != nil:
		p.SetEngineIDConfirmed(false)
		pl.log.WarnContext(ctx, "re-reading the KV engine id failed; retrying on the next probe",
			"worker", p.DisplayURL(), "worker_id", p.ID, "error", err.Error())
	case id == "":
		p.SetEngineIDConfirmed(true)
	default:
		old := p.EngineID()
		if p.SetEngineID(id) {
			pl.log.InfoContext(ctx, "KV engine id changed", "worker", p.DisplayURL(), "worker_id", p.ID, "from", old, "to", id)
		}
	}
}

// modelNotFound reports whether a leg's error is the engine saying it does not serve the
// requested model (404 / NOT_FOUND naming a model): the worker's model list is stale.
func modelNotFound(status int, msg string) bool {
	return status == http.StatusNotFound && strings.Contains(strings.ToLower(msg), "model")
}

// refreshFactsLater re-reads w's server and model info in the background (bounded by
// engineIDReadTimeout), at most one refresh per worker at a time; the failing request is
// not held up by it. A no-op without a facts refresher or once the pipeline is closing.
func (pl *Pipeline) refreshFactsLater(w *worker.Live) {
	if pl.facts == nil || w == nil {
		return
	}
	if _, busy := pl.refreshing.LoadOrStore(w.ID, struct{}{}); busy {
		return
	}
	select {
	case <-pl.closing:
		pl.refreshing.Delete(w.ID)
		return
	default:
	}
	pl.bg.Add(1)
	go func() {
		defer pl.bg.Done()
		defer pl.refreshing.Delete(w.ID)
		ctx, cancel := context.WithTimeout(context.Background(), engineIDReadTimeout)
		defer cancel()
		pl.facts(ctx, w)
	}()
}
