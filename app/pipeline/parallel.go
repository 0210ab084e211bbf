package pipeline

import (
	"context"
	"errors"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/smg-go/smg/app/dispatch"
	"github.com/smg-go/smg/ports"
)

// DeferredAbortMaxWait bounds how long a decode leg the client left before its first item
// is kept open, waiting for that item, before its Abort goes out (SMG abort_on_drop.rs
// DEFERRED_ABORT_MAX_WAIT; seed "Decode aborts wait for the handoff (gRPC)").
const DeferredAbortMaxWait = 30 * time.Second

// abortReason is the reason SGLang and TokenSpeed Abort RPCs carry (smg-spec.md §9.6).
const abortReason = "Stream dropped"

type item struct {
	ev  ports.GRPCEvent
	err error
}

// readAhead is how many messages a streamed decode's reader may receive before the
// dispatch loop takes them: a loop that finds messages waiting writes their events before
// one flush. Other legs send one or two messages and get a buffer of one.
const readAhead = 16

// reader pumps a stream into a channel of capacity n until the stream ends or stop is
// closed.
func reader(st ports.GRPCStream, stop <-chan struct{}, n int) <-chan item {
	ch := make(chan item, n)
	go func() {
		for {
			ev, err := st.Recv()
			select {
			case ch <- item{ev, err}:
			case <-stop:
				return
			}
			if err != nil {
				return
			}
		}
	}()
	return ch
}

// aheadOf is the reader capacity of leg: readAhead when it streams.
func aheadOf(leg ports.GRPCLeg) int {
	if leg.Stream {
		return readAhead
	}
	return 1
}

// parallel runs every unit's two legs at once (SGLang, TokenSpeed; grpc.md §1.8): the
// first leg of any unit that fails cancels the group with its fault and the others are
// retired at once; a client that leaves aborts prefills at once and defers each decode's
// abort until its first item (at most DeferredAbortMaxWait).
func (pl *Pipeline) parallel(ctx context.Context, units []unit, r *responder) error {
	gctx, fail := context.WithCancelCause(ctx)
	defer fail(nil)
	if len(units) == 1 {
		pl.runUnit(gctx, fail, &units[0], r) // the common case: no goroutine of its own
	} else {
		var wg sync.WaitGroup
		for i := range units {
			wg.Add(1)
			go func(u *unit) {
				defer wg.Done()
				pl.runUnit(gctx, fail, u, r)
			}(&units[i])
		}
		wg.Wait()
	}
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

// isFault reports whether a group was cancelled by a failed leg (not by the client, the
// request timeout or shutdown).
func isFault(err error) bool {
	var f *fault
	return errors.As(err, &f)
}

// runUnit runs one prefill/decode pair sharing a request id and a rendezvous.
func (pl *Pipeline) runUnit(gctx context.Context, fail context.CancelCauseFunc, u *unit, r *responder) {
	// The legs' RPCs outlive the client's context: the decode's abort is deferred.
	// Each stream's Close cancels its RPC; the legs are not tied to gctx's cancellation.
	legCtx := context.WithoutCancel(gctx)
	pst, err := pl.gen.Generate(legCtx, u.pLeg)
	if err != nil {
		fail(pl.legFault(gctx, "prefill", u.pLeg, err, false))
		return
	}
	decodeStart := time.Now()
	dst, err := pl.gen.Generate(legCtx, u.dLeg)
	if err != nil {
		pl.retire(u.pLeg, pst)
		fail(pl.legFault(gctx, "decode", u.dLeg, err, false))
		return
	}
	stopP, stopD := make(chan struct{}), make(chan struct{})
	pch, dch := reader(pst, stopP, 1), reader(dst, stopD, aheadOf(u.dLeg))
	ptC, ptT := deadline(pl.legDeadline("prefill", u.pLeg))
	defer stopTimer(ptT)
	dtC, dtT := deadline(pl.legDeadline("decode", u.dLeg))
	defer stopTimer(dtT)
	prefillDone, decodeDone, first := false, false, false
	prefillAnswered := false // the prefill sent something (its deadline no longer applies)
	prefillComplete := false // the prefill sent its complete (its stream may end)
	stopped := false         // a gateway stop ended the samples before the engine did
	completed := false       // every sample got its complete; the stream's end is still read
	judgeDecode := false     // the decode's stream ended (io.EOF) while its items were held: judged at release
	pItems, dItems := 0, 0   // messages each stream sent
	// A stream that asks for logprobs waits for the prefill's answer before the decode's
	// output goes out (grpc.md §1.8); the decode's items are held meanwhile.
	hold := r.j.stream && r.j.lp.on
	var held []ports.GRPCEvent
	cacheNoted := false // the decode's first complete was read for a silent recompute
	consume := func(ev ports.GRPCEvent) {
		if completed || stopped {
			return
		}
		if ev.Complete && !cacheNoted {
			cacheNoted = true
			pl.noteDecodeCache(gctx, u, ev)
		}
		if r.event(u, ev) {
			if ev.Complete {
				completed = true // read on to the stream's end
			} else {
				// A gateway stop ended the samples; the engine is still generating.
				stopped, decodeDone, dch = true, true, nil
				pl.record(u.dLeg.Worker, http.StatusOK)
			}
		}
	}
	// endDecode judges a decode stream that ended: a success once every sample got its
	// complete, else a truncated answer (the decode's failure).
	endDecode := func() {
		if stopped {
			return // recorded when the gateway stop ended the samples
		}
		if completed {
			pl.record(u.dLeg.Worker, http.StatusOK)
			return
		}
		fail(pl.endedEarly(gctx, "decode", u.dLeg, dItems))
	}
	release := func() {
		hold = false
		for _, ev := range held {
			consume(ev)
		}
		held = nil
		if judgeDecode {
			judgeDecode = false
			endDecode()
		}
	}
	for !(prefillDone && decodeDone) {
		if len(pch) == 0 && len(dch) == 0 {
			r.flushIdle() // nothing waiting: what the events so far wrote leaves now
		}
		select {
		case <-ptC:
			ptC = nil
			if dtC == nil { // the decode answered, so the prefill's silence is its own
				fail(pl.timeoutFault("prefill", u.pLeg))
				continue
			}
			// Both legs are silent. An SGLang or TokenSpeed prefill waits for its decode to
			// claim the room, so a silent decode and a silent prefill look alike: an equal or
			// shorter decode deadline is passing too and speaks for the pair; otherwise the
			// fault is ambiguous and the retry loop finds out which leg was silent.
			if pl.legDeadline("decode", u.dLeg) <= pl.legDeadline("prefill", u.pLeg) {
				continue
			}
			fail(pl.ambiguousTimeout("prefill", u.pLeg, u.dLeg.Worker))
		case <-dtC:
			dtC = nil
			if prefillAnswered {
				fail(pl.timeoutFault("decode", u.dLeg))
				continue
			}
			fail(pl.ambiguousTimeout("decode", u.dLeg, u.pLeg.Worker))
		case it := <-pch:
			ptC, prefillAnswered = nil, true
			if it.err != nil { // EOF or failure: the prefill leg is over
				dispatch.PrefillLegEnded(gctx)
			}
			switch {
			case it.err == io.EOF && !prefillComplete:
				prefillDone, pch = true, nil
				fail(pl.endedEarly(gctx, "prefill", u.pLeg, pItems))
			case it.err == io.EOF:
				prefillDone, pch = true, nil
				pl.record(u.pLeg.Worker, http.StatusOK)
				release()
			case it.err != nil:
				prefillDone, pch = true, nil
				if !first { // the decode has not answered: a KV handoff it never claimed is its own
					if f := pl.kvPeerFault(gctx, "decode", u.dLeg, u.pLeg, it.err); f != nil {
						fail(f)
						continue
					}
				}
				fail(pl.legFault(gctx, "prefill", u.pLeg, it.err, first))
			case it.ev.Complete:
				pItems++
				prefillComplete = true
				r.prefilled(u, it.ev)
				if pl.cachedTokens != nil {
					pl.cachedTokens(u.pLeg.Worker.URL, it.ev.PromptTokens, it.ev.CachedTokens)
				}
				release()
			default:
				pItems++
			}
		case it := <-dch:
			dtC = nil
			switch {
			case it.err == io.EOF:
				decodeDone, dch = true, nil
				if hold {
					judgeDecode = true
				} else {
					endDecode()
				}
			case it.err != nil && completed:
				// Every sample already finished; the answer stands.
				decodeDone, dch = true, nil
				pl.log.WarnContext(gctx, "gRPC decode stream failed after its last sample", "worker", u.dLeg.Worker.DisplayURL(), "engine_request_id", u.dLeg.RequestID, "err", it.err)
			case it.err != nil:
				decodeDone, dch = true, nil
				if !prefillAnswered { // the prefill has not answered: a KV it never sent is its own
					if f := pl.kvPeerFault(gctx, "prefill", u.pLeg, u.dLeg, it.err); f != nil {
						fail(f)
						continue
					}
				}
				fail(pl.legFault(gctx, "decode", u.dLeg, it.err, first))
			case completed:
			default:
				dItems++
				if f := pl.outOfVocab(gctx, r.j, u.dLeg, it.ev); f != nil {
					dch = nil // still generating: retired (aborted) with the group
					fail(f)
					continue
				}
				if !first {
					pl.observeDecodeTTFT(gctx, r.j, decodeStart)
				}
				first, dtC = true, nil
				if empty(it.ev) {
					continue
				}
				if hold {
					held = append(held, it.ev)
					continue
				}
				consume(it.ev)
			}
		case <-gctx.Done():
			close(stopP)
			if !prefillDone {
				pl.retire(u.pLeg, pst)
			} else {
				pst.Close()
			}
			if !decodeDone && !completed {
				if !first && !isFault(context.Cause(gctx)) {
					pl.deferAbort(u.dLeg, dst, dch, stopD)
					return
				}
				pl.retire(u.dLeg, dst)
			} else {
				dst.Close()
			}
			close(stopD)
			return
		}
	}
	close(stopP)
	close(stopD)
	pst.Close()
	if stopped {
		pl.retire(u.dLeg, dst)
		return
	}
	dst.Close()
}

// retire ends a leg that is still running at once: its Abort RPC, then the RPC itself.
func (pl *Pipeline) retire(leg ports.GRPCLeg, st ports.GRPCStream) {
	pl.bg.Add(1)
	go func() {
		defer pl.bg.Done()
		_ = pl.gen.Abort(context.Background(), leg.Worker.Worker, abortReason, leg.RequestID)
		st.Close()
	}()
}

// deferAbort keeps a decode leg the client left before its first item until that item (or
// the stream's end or error) arrives, at most DeferredAbortMaxWait, then aborts it: tearing
// a decode engine down mid-transfer strands the KV the prefill is pushing.
func (pl *Pipeline) deferAbort(leg ports.GRPCLeg, st ports.GRPCStream, ch <-chan item, stop chan struct{}) {
	pl.bg.Add(1)
	go func() {
		defer pl.bg.Done()
		t := time.NewTimer(pl.deferredWait)
		defer t.Stop()
		ended := false
		select {
		case it := <-ch:
			ended = it.err != nil || it.ev.Complete
		case <-t.C:
		case <-pl.closing:
		}
		if !ended {
			_ = pl.gen.Abort(context.Background(), leg.Worker.Worker, abortReason, leg.RequestID)
		}
		st.Close()
		close(stop)
	}()
}
