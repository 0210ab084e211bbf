package dispatch

import (
	"context"
	"net/http"
	"time"

	"github.com/smg-go/smg/domain/errs"
	"github.com/smg-go/smg/domain/handoff"
	"github.com/smg-go/smg/domain/worker"
)

// GRPCPipeline serves one attempt whose selected pair is gRPC (app/pipeline): the gateway
// tokenizes, runs both legs as Generate RPCs and builds the response itself. The retry loop,
// selection, blame ledger and breakers stay here: an uncommitted failure blamed on one
// worker is returned as LegFault, anything else as an *errs.Error. committed reports that
// the response head reached the client.
type GRPCPipeline interface {
	Attempt(ctx context.Context, w http.ResponseWriter, rq *handoff.Request, p, dc *worker.Live, hdr http.Header) (committed bool, err error)
	// CountTokens answers /v1/messages/count_tokens for the Anthropic body rq with the
	// gateway's own count on gRPC worker p's model (no leg is contacted).
	CountTokens(ctx context.Context, w http.ResponseWriter, rq *handoff.Request, p *worker.Live) error
}

// RoutingTokenizer is implemented by a GRPCPipeline that can give a request's prompt token
// ids before selection (policy.Request.TokenIDs), for policies that match them against the
// engines' KV events. nil when it cannot: the model's tokenizer is not loaded yet, a batch
// or a body it does not tokenize. Called once per request, before the first attempt.
type RoutingTokenizer interface {
	RoutingTokens(rq *handoff.Request) []uint32
}

// LegFault is an attempt's failure blamed on worker w, for a GRPCPipeline: e is the client
// error (e.Leg names the leg), status what w's breaker records (the leg's HTTP status; 0
// with cause for a transport failure). The retry loop records it once and applies the
// blame ledger, as for the HTTP legs.
func LegFault(e *errs.Error, w *worker.Live, status int, cause error) error {
	return &legFault{e: e, w: w, status: status, cause: cause}
}

// MarkAmbiguous marks err, a LegFault for a leg's deadline, as passed while peer (the other
// leg's worker) had not answered either: the retry loop keeps the decode and changes the
// prefill to find out which leg was silent, and charges only that one (tries.failed,
// tries.settle). Errors that are not a LegFault are left alone.
func MarkAmbiguous(err error, peer *worker.Live) {
	if f := faultOf(err); f != nil {
		f.ambiguous, f.peer = true, peer
	}
}

// MarkKVLoadAmbiguous marks err, a LegFault for a vLLM decode's 500 after prefill peer
// handed it the KV, as ambiguous with peer (kvLoadFault): the retry loop settles which one
// it was. peerOK is peer's held success (its status; 0 = none) and answered when it
// answered: recorded when the decode is charged (unless peer failed since), dropped when the
// prefill is. Errors that are not a LegFault are left alone.
func MarkKVLoadAmbiguous(err error, peer *worker.Live, peerOK int, answered time.Time) {
	if f := faultOf(err); f != nil {
		var held *heldOutcome
		if peerOK != 0 {
			held = &heldOutcome{w: peer, status: peerOK, at: answered}
		}
		kvLoadFault(f, peer, held)
	}
}

// ContextError is the client-facing error of an attempt whose request context ended while
// what was in progress: 503 at the shutdown grace deadline, 504 request_timeout at the
// request timeout, else 499 client_closed_request (not written: nobody reads it).
func ContextError(ctx context.Context, what string) *errs.Error { return contextError(ctx, what) }

// KVPeerFault is the LegFault of a leg (leg "prefill" or "decode", worker w) that had not
// answered when its peer engine reported that the KV handoff failed waiting for it (SGLang's
// and TokenSpeed's KVTransferError … KVPoll.Bootstrapping / KVPoll.WaitingForInput, over
// gRPC an INTERNAL status; engines.md §2.4): 502 <leg>_kv_transfer_failed charged to w as
// unresponsive (a retry never goes back to it), never to the reporting peer, exactly as
// the HTTP dispatcher charges it. peerMsg is the reporter's message.
func KVPeerFault(leg string, w *worker.Live, peerMsg string) error {
	return kvPeerFault(leg, w, peerMsg)
}
