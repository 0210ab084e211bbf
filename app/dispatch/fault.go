package dispatch

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/smg-go/smg/domain/errs"
	"github.com/smg-go/smg/domain/policy"
	"github.com/smg-go/smg/domain/wire"
	"github.com/smg-go/smg/domain/worker"
)

// legFault is an attempt's failure blamed on one worker: the client-facing error, and what
// that worker's breaker records (Status, or 0 with Cause). It is both the error an attempt
// returns and the cause its legs' context is cancelled with, so whichever leg fails first
// names the culprit for everyone (errs.As finds the *errs.Error inside). Faults of
// uncommitted attempts are recorded by the retry loop (blameLedger decides); faults after a
// response was committed are recorded where they happen.
type legFault struct {
	e      *errs.Error
	w      *worker.Live
	status int
	cause  error
	// recorded is set once the fault reached the OutcomeRecorder (or was waived): the relay
	// and finish can both meet a prefill fault that came after the commit.
	recorded atomic.Bool
	// ambiguous marks a fault either leg may have caused: a deadline that passed while
	// neither leg had answered, or a decode that failed loading the KV its prefill handed
	// off (kvLoadFault). peer is the other leg's worker; the retry loop settles which.
	ambiguous bool
	peer      *worker.Live
	// held is the peer prefill's success when it was held back until the ambiguity is
	// settled (kvLoadFault): recorded with the fault when the decode is charged, dropped
	// when the prefill is (its answer handed off KV that was gone). nil: none.
	held *heldOutcome
}

// pairOf returns an ambiguous fault's prefill and decode workers.
func (f *legFault) pairOf() (p, dc *worker.Live) {
	if f.e.Leg == "prefill" {
		return f.w, f.peer
	}
	return f.peer, f.w
}

// blaming is f charged to w (one of its pair): the same status or cause, the same client
// error.
func (f *legFault) blaming(w *worker.Live) *legFault {
	c := &legFault{e: f.e, w: w, status: f.status, cause: f.cause}
	if w == f.w {
		c.peer, c.held = f.peer, f.held
	}
	return c
}

// heldOutcome is a leg's success whose recording waited for a settled ambiguity: the
// worker, its status, and when it answered.
type heldOutcome struct {
	w      *worker.Live
	status int
	at     time.Time
}

// silent reports whether f is a deadline that passed (the worker was unresponsive).
func (f *legFault) silent() bool { return errors.Is(f.cause, errs.ErrUnresponsive) }

// kvLoadFault marks f, a vLLM decode's 500 answered after its prefill handed off the KV, as
// ambiguous with the prefill p: vLLM answers a failed KV load (kv_load_failure_policy
// "fail") with the same 500 "Internal server error" as any other generation error
// (engines.md §3.1; vllm/entrypoints/openai serving _raise_if_error), so the decode may be
// broken, or the prefill may have died or freed its blocks after answering. Charging the
// decode alone would let one dead prefill open a healthy decode's breaker: every request
// in flight to it fails there at once.
// The prefill's success, held back until then (held, nil for none), goes with the fault:
// a prefill that keeps losing the KV it hands off must not look healthy to its breaker.
func kvLoadFault(f *legFault, p *worker.Live, held *heldOutcome) *legFault {
	f.ambiguous, f.peer, f.held = true, p, held
	return f
}

func (f *legFault) Error() string { return f.e.Error() }
func (f *legFault) Unwrap() error { return f.e }

// faultOf returns the *legFault inside err, or nil.
func faultOf(err error) *legFault {
	var f *legFault
	if errors.As(err, &f) {
		return f
	}
	return nil
}

// causeFault returns the fault an attempt's legs were cancelled with, or nil (not
// cancelled, or cancelled by the client, the request timeout or shutdown).
func causeFault(legCtx context.Context) *legFault {
	if legCtx.Err() == nil {
		return nil
	}
	return faultOf(context.Cause(legCtx))
}

// recordFault reports f to the OutcomeRecorder, once, and the peer success it held.
func (d *Dispatcher) recordFault(f *legFault) {
	if f != nil && f.w != nil && f.recorded.CompareAndSwap(false, true) {
		d.record(f.w, f.status, f.cause)
		d.recordHeld(f.held)
	}
}

// recordHeld reports a held success, if any, unless its worker failed since it answered
// (worker.Live.FailedSince: a prefill that died after answering must not have its failure
// streak reset by answers it gave before).
func (d *Dispatcher) recordHeld(h *heldOutcome) {
	if h != nil && !h.w.FailedSince(h.at) {
		d.record(h.w, h.status, nil)
	}
}

// unresponsive wraps errs.ErrUnresponsive with what was waited for.
func unresponsive(what string) error { return fmt.Errorf("%s: %w", what, errs.ErrUnresponsive) }

// legTimer cancels an attempt's legs with a fault when its deadline passes before stop.
// A zero deadline never fires.
type legTimer struct{ t *time.Timer }

// startLegTimer arms the deadline; fire runs when it passes and cancels the attempt's legs
// with the fault it builds (or nothing). fire is the timer's own callback: one closure and
// one timer per leg deadline.
func startLegTimer(deadline time.Duration, fire func()) legTimer {
	if deadline <= 0 {
		return legTimer{}
	}
	return legTimer{t: time.AfterFunc(deadline, fire)}
}

// stop disarms the deadline; it reports false when it had already passed.
func (lt legTimer) stop() bool { return lt.t == nil || lt.t.Stop() }

// secsText renders a duration as "<n>s" for messages.
func secsText(d time.Duration) string { return strconv.FormatFloat(d.Seconds(), 'f', -1, 64) + "s" }

// prefillTimeoutFault is the 504 for a prefill leg that sent no answer within
// --prefill-timeout-secs: the prefill's fault, counted as unresponsive.
func (d *Dispatcher) prefillTimeoutFault(p *worker.Live, why string) *legFault {
	return &legFault{w: p, cause: unresponsive("prefill deadline"), e: &errs.Error{
		Status: http.StatusGatewayTimeout, Code: wire.CodePrefillTimeout, Leg: "prefill", Retryable: true,
		Message: "prefill worker " + p.ID + " " + why + " within --prefill-timeout-secs (" + secsText(d.cfg.PrefillTimeout) + ")"}}
}

// decodeTimeoutFault is the 504 for a decode leg that produced no output within its
// deadline (--first-byte-timeout-secs streaming, --decode-timeout-secs otherwise).
func (d *Dispatcher) decodeTimeoutFault(dc *worker.Live, stream bool) *legFault {
	code, flag, lim := wire.CodeDecodeTimeout, "--decode-timeout-secs", d.cfg.DecodeTimeout
	if stream {
		code, flag, lim = wire.CodeDecodeFirstByteTimeout, "--first-byte-timeout-secs", d.cfg.FirstByteTimeout
	}
	return &legFault{w: dc, cause: unresponsive("decode deadline"), e: &errs.Error{
		Status: http.StatusGatewayTimeout, Code: code, Leg: "decode", Retryable: true,
		Message: "decode worker " + dc.ID + " sent no output within " + flag + " (" + secsText(lim) + ")"}}
}

// bootstrapFault is kvPeerFault for a failure the dispatcher acts on: the bootstrap
// rendezvous of the pair failed, so smg_pd_bootstrap_failures_total grows by one (seed
// "PD Metrics"; the injection itself cannot fail here: a body that is not a JSON object is
// refused with 400 before a pair is selected, so the room the engines never met is where a
// bootstrap fails).
func (d *Dispatcher) bootstrapFault(leg string, w *worker.Live, peerMsg string) *legFault {
	d.metrics.IncBootstrapFailure()
	return kvPeerFault(leg, w, peerMsg)
}

// kvPeerFault blames w, the leg that had not answered when its peer engine reported that
// the KV handoff failed waiting for it (SGLang's KVTransferError; engines.md §2.4): 502
// <leg>_kv_transfer_failed, counted as unresponsive, never on the reporting peer.
func kvPeerFault(leg string, w *worker.Live, peerMsg string) *legFault {
	peer := "decode"
	if leg == "decode" {
		peer = "prefill"
	}
	return &legFault{w: w, cause: unresponsive("peer reported a failed KV handoff"), e: &errs.Error{
		Status: http.StatusBadGateway, Code: kvCode(leg), Leg: leg, Retryable: true,
		Message: "the " + peer + " engine gave up on the KV handoff while " + leg + " worker " + w.ID +
			" had not answered: " + peerMsg}}
}

// blameLedger remembers, for one client request, which worker each leg's failures were
// counted on. A failure with the same code again on the same leg is the request's doing,
// not the workers': on a second worker of the leg it is a poisoned prompt, not two broken
// engines; on the same worker (the only one left, or one the retry went back to), an
// answer with the same error status code was counted already. (A transport failure or a
// deadline on the same worker is not a repeat: the prompt cannot cause it, and a pair's two
// silences settled at once are both its own.) Either way it is not counted again and ends the retries, so one request
// moves at most one breaker per leg, by one failure.
type blameLedger struct {
	prefill, decode *ledgerEntry
}

type ledgerEntry struct {
	code   string
	worker string
}

// repeat says how a failure relates to what the request's leg already failed with.
type repeat int

const (
	// repeatNone: a first failure on the leg, or another code: record and retry.
	repeatNone repeat = iota
	// repeatSameWorker: the same code on the same worker, already counted there.
	repeatSameWorker
	// repeatOtherWorker: the same code on another worker of the leg.
	repeatOtherWorker
)

// admit classifies f against the leg's first failure during this request (and remembers
// f when it is the first).
func (l *blameLedger) admit(f *legFault) repeat {
	slot := &l.decode
	if f.e.Leg == "prefill" {
		slot = &l.prefill
	}
	if *slot == nil {
		*slot = &ledgerEntry{code: f.e.Code, worker: f.w.ID}
		return repeatNone
	}
	switch {
	case (*slot).code != f.e.Code:
		return repeatNone
	case (*slot).worker == f.w.ID:
		if f.status == 0 {
			// A transport failure or a deadline is the worker's on every attempt (and a
			// retry never goes back to a silent worker: tries.hung).
			return repeatNone
		}
		return repeatSameWorker
	}
	return repeatOtherWorker
}

func kvCode(leg string) string {
	if leg == "prefill" {
		return wire.CodePrefillKVTransferFailed
	}
	return wire.CodeDecodeKVTransferFailed
}

// tries is what a request's retry loop remembers across its attempts.
type tries struct {
	ledger blameLedger
	// hung are the ids of workers that were unresponsive for this request: a retry never
	// goes back to one (it would cost another whole deadline).
	hung []string
	// pending is an ambiguous fault not yet charged: the retry keeps its decode and changes
	// its prefill. If that pair answers, the prefill was the culprit; if the kept decode
	// fails the same way again, it was. Anything else is charged to the leg that reported
	// it. (One faulty worker per pair is assumed: with every prefill hung the prefills'
	// deadlines pass and they are charged; when the deadlines are equal the decode's speaks
	// for the pair.)
	pending *legFault
	// prefill and decode are the URLs of the pair the latest attempt used.
	prefill, decode string
	// held are successes that failed hands back to record: the peer prefill of a pending
	// fault the decode turned out to own.
	held []*heldOutcome
}

// failed notes an attempt's fault and returns the faults to record now (none while an
// ambiguous one waits to be settled). It updates preq for the retry: an ambiguous fault
// pins its decode and avoids its prefill.
func (t *tries) failed(f *legFault, preq *policy.Request) []*legFault {
	if f.ambiguous {
		p, dc := f.pairOf()
		if t.pending != nil {
			prev := t.pending
			_, pdc := prev.pairOf()
			t.pending, preq.PinDecode = nil, ""
			if pdc.ID == dc.ID && prev.e.Leg == "decode" && f.e.Leg == "decode" {
				preq.Avoid = append(preq.Avoid, dc.URL)
				if !prev.silent() || !f.silent() {
					// The kept decode failed again with another prefill (or the same one,
					// the only one left): its own doing, charged once for the request. The
					// first prefill's answer was good.
					if prev.held != nil {
						t.held = append(t.held, prev.held)
					}
					return []*legFault{f.blaming(dc)}
				}
				// The kept decode waited out its own deadline again with another prefill:
				// both silences were its own.
				t.hung = append(t.hung, dc.ID)
				return []*legFault{prev.blaming(dc), f.blaming(dc)}
			}
			// Not settled (the prefills' deadlines passed, or the decode changed): each is
			// charged to the leg that reported it, as an unambiguous fault would be.
			for _, x := range []*legFault{prev, f} {
				if x.silent() {
					t.hung = append(t.hung, x.w.ID)
				}
			}
			preq.Avoid = append(preq.Avoid, prev.w.URL, f.w.URL)
			return []*legFault{prev.blaming(prev.w), f.blaming(f.w)}
		}
		t.pending, preq.PinDecode = f, dc.URL
		preq.Avoid = append(preq.Avoid, p.URL)
		return nil
	}
	if f.silent() {
		t.hung = append(t.hung, f.w.ID)
	}
	return []*legFault{f}
}

// settle charges an ambiguous fault left pending when the request ends: to its prefill
// when the request then succeeded on the same decode with another prefill (that decode
// answered), else to the leg that reported it.
func (t *tries) settle(succeeded bool) *legFault {
	f := t.pending
	if f == nil {
		return nil
	}
	t.pending = nil
	p, dc := f.pairOf()
	if succeeded && t.decode == dc.URL && t.prefill != p.URL {
		return f.blaming(p)
	}
	return f.blaming(f.w)
}

// samePair reports whether p and dc are the pair of the pending ambiguous timeout: the
// retry could not change the prefill, so it would only wait out the same silence again.
// A pending fault that was an answer, not a silence, allows the same pair: a retry costs
// no deadline, and a transient failure deserves it.
func (t *tries) samePair(p, dc *worker.Live) bool {
	if t == nil || t.pending == nil || !t.pending.silent() {
		return false
	}
	pp, pd := t.pending.pairOf()
	return pp.ID == p.ID && pd.ID == dc.ID
}

// unresponsive reports whether w was unresponsive earlier in this request.
func (t *tries) unresponsive(w *worker.Live) bool {
	return t != nil && slices.Contains(t.hung, w.ID)
}

// errOnlyUnresponsive ends the retries when selection can offer only a worker that was
// already unresponsive for this request; the previous attempt's error is the answer.
var errOnlyUnresponsive = errors.New("only workers that were unresponsive for this request are left")
