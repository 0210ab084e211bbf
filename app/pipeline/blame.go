package pipeline

import (
	"context"
	"net/http"
	"strconv"

	"github.com/smg-go/smg/adapters/engine/grpcengine"
	"github.com/smg-go/smg/app/dispatch"
	"github.com/smg-go/smg/domain/errs"
	"github.com/smg-go/smg/domain/handoff"
	"github.com/smg-go/smg/domain/wire"
	"github.com/smg-go/smg/ports"
)

// kvPeerFault returns the fault of silent, the leg that had not answered, when err, the
// RPC error of its peer (the leg that reported), is the engine's KV handoff failure: an
// SGLang/TokenSpeed prefill's bootstrap timeout (KVPoll.Bootstrapping: no decode claimed
// its room) or a decode's KV wait (KVPoll.WaitingForInput: its prefill never sent), both
// INTERNAL over gRPC (engines.md §2.4, grpc.md §3.2). The HTTP dispatcher's rule applies
// (dispatch.KVPeerFault): 502 <silent leg>_kv_transfer_failed charged to the silent leg as
// unresponsive, never to the reporter, so the retry keeps away from the silent worker, and
// counted in smg_pd_bootstrap_failures_total (the pair's bootstrap room was never met). nil
// when err is another failure.
func (pl *Pipeline) kvPeerFault(ctx context.Context, silentLeg string, silent, reporter ports.GRPCLeg, err error) *fault {
	_, msg := grpcengine.ErrorStatus(err)
	if !handoff.IsKVTransferFailure(msg) {
		return nil
	}
	if pl.metrics != nil {
		pl.metrics.IncBootstrapFailure() // the pair's bootstrap rendezvous failed
	}
	pl.log.WarnContext(ctx, "gRPC PD leg gave up on the KV handoff; the silent peer is blamed",
		"leg", silentLeg, "worker", silent.Worker.DisplayURL(), "engine_request_id", silent.RequestID,
		"reporter", reporter.Worker.DisplayURL(), "err", msg)
	return &fault{err: dispatch.KVPeerFault(silentLeg, silent.Worker, msg), w: silent.Worker}
}

// endedEarly is the fault of a leg whose stream ended (io.EOF) before its complete: the
// engine's answer is truncated, as an HTTP body that ends early or is not a valid engine
// response. 502 prefill_invalid_response / decode_invalid_response, charged to the leg's
// worker as 502 (a backend error) and retryable while nothing was committed. items is how
// many messages the stream had sent.
func (pl *Pipeline) endedEarly(ctx context.Context, leg string, l ports.GRPCLeg, items int) *fault {
	code := wire.CodePrefillInvalidResponse
	if leg == "decode" {
		code = wire.CodeDecodeInvalidResponse
	}
	pl.log.WarnContext(ctx, "gRPC PD leg stream ended before its complete", "leg", leg,
		"worker", l.Worker.DisplayURL(), "engine_request_id", l.RequestID, "messages", items)
	e := &errs.Error{Status: http.StatusBadGateway, Code: code, Leg: leg, Retryable: true,
		Message: leg + " worker " + l.Worker.ID + " ended its gRPC stream before its complete (after " +
			strconv.Itoa(items) + " messages): the answer is truncated"}
	return &fault{err: dispatch.LegFault(e, l.Worker, http.StatusBadGateway, nil), w: l.Worker, status: http.StatusBadGateway}
}

// outOfVocab returns the fault of a decode event carrying a token id the request's
// tokenizer does not know (its vocabulary and added tokens, vocab ids 0..size-1): the text
// would silently be empty. 502 decode_invalid_response charged to the decode as 502,
// logged at WARN with the worker and the request (the log line carries the request_id).
// nil when every id is known (or the model has no tokenizer size).
func (pl *Pipeline) outOfVocab(ctx context.Context, j *job, l ports.GRPCLeg, ev ports.GRPCEvent) *fault {
	if j.model == nil || j.model.Tokenizer == nil {
		return nil
	}
	size := j.model.Tokenizer.VocabSize()
	if size <= 0 {
		return nil
	}
	for _, id := range ev.IDs {
		if int64(id) < int64(size) {
			continue
		}
		pl.log.WarnContext(ctx, "gRPC decode returned a token id outside the vocabulary",
			"worker", l.Worker.DisplayURL(), "engine_request_id", l.RequestID, "token_id", id, "vocab_size", size)
		e := &errs.Error{Status: http.StatusBadGateway, Code: wire.CodeDecodeInvalidResponse, Leg: "decode", Retryable: true,
			Message: "decode worker " + l.Worker.ID + " returned token id " + strconv.FormatUint(uint64(id), 10) +
				", outside the tokenizer's vocabulary of " + strconv.Itoa(size) + " ids"}
		return &fault{err: dispatch.LegFault(e, l.Worker, http.StatusBadGateway, nil), w: l.Worker, status: http.StatusBadGateway}
	}
	return nil
}

// empty reports whether ev, a decode message, carries nothing for the client: not a complete
// and no token ids (a malformed message, neither chunk nor complete, reads as one). It is
// not passed to the responder, so it commits no stream head (a chat role chunk, a
// Messages message_start) and a decode whose stream then ends early is still retried.
func empty(ev ports.GRPCEvent) bool { return !ev.Complete && len(ev.IDs) == 0 }
