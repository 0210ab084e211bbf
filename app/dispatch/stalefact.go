package dispatch

import (
	"bytes"
	"net/http"

	"github.com/smg-go/smg/domain/errs"
	"github.com/smg-go/smg/domain/handoff"
	"github.com/smg-go/smg/domain/wire"
	"github.com/smg-go/smg/domain/worker"
)

// staleEngineIDFault is the fault of a vLLM decode that refused, with a 500 naming
// remote_engine_id, the Mooncake handoff minted from prefill p's KV engine id: the stale
// fact is the prefill's (a vLLM restarted on its URL has a new engine id), so the prefill
// is charged — 502 prefill_kv_transfer_failed, retryable — and never the decode. nil when
// the failure is not that one (then kvLoadFault decides). Over HTTP the engine id is the
// registered kv_engine_id: nothing re-reads it, so the message says to re-register.
func staleEngineIDFault(p, dc *worker.Live, status int, body []byte) *legFault {
	if status != http.StatusInternalServerError || !isMooncake(p) || !bytes.Contains(body, []byte(wire.KVRemoteEngineID)) {
		return nil
	}
	id, _ := handoff.EffectiveEngineID(p.Worker)
	return &legFault{w: p, status: http.StatusBadGateway, e: &errs.Error{
		Status: http.StatusBadGateway, Code: wire.CodePrefillKVTransferFailed, Leg: "prefill", Retryable: true,
		Message: "decode worker " + dc.ID + " refused the KV engine id " + id + " of prefill worker " + p.ID +
			" (restarted with another engine id? re-register it with its new kv_engine_id): " + upstreamMessage(body)}}
}

func isMooncake(w *worker.Live) bool {
	c, err := handoff.ConnectorFor(w.Worker, func() string { return "" })
	if err != nil {
		return false
	}
	_, ok := c.(*handoff.Mooncake)
	return ok
}
