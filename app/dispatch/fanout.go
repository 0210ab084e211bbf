package dispatch

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/smg-go/smg/domain/errs"
	"github.com/smg-go/smg/domain/handoff"
	"github.com/smg-go/smg/domain/policy"
	"github.com/smg-go/smg/domain/worker"
)

// fanout serves an SGLang request with n>1 as n single-sample dispatches, each with its own
// pair and bootstrap room, merged back into one response with one choice per sample in
// index order (issue #4 item 6; SGLang stalls the extra samples of one shared rendezvous).
// The samples fail together: the first failure cancels every other leg.
func (d *Dispatcher) fanout(ctx context.Context, w http.ResponseWriter, rq *handoff.Request,
	preq *policy.Request, p0, d0 *worker.Live, hdr http.Header) (committed bool, err error) {
	bodies, err := handoff.SplitSamples(rq)
	if err != nil {
		return false, err
	}
	n := len(bodies)
	fctx, fcancel := context.WithCancel(ctx)
	defer fcancel()
	opens := make([]*open, n)
	releases := make([]func(), 0, 2*n)
	var mu sync.Mutex
	var first error
	var wg sync.WaitGroup
	for i := range bodies {
		wg.Go(func() {
			err := func() error {
				p, dc := p0, d0
				lctx := fctx // pair 0's prefill-end hook comes with the attempt's context
				if i > 0 {
					var rel func()
					var hooks tokenHooks
					var err error
					p, dc, rel, hooks, err = d.selectPair(preq)
					if err != nil {
						return err
					}
					lctx = withTokenHooks(fctx, hooks)
					mu.Lock()
					releases = append(releases, rel)
					mu.Unlock()
				}
				rel, err := d.admitDecode(fctx, dc, 1)
				if err != nil {
					return err
				}
				mu.Lock()
				releases = append(releases, rel)
				mu.Unlock()
				legs := handoff.BootstrapPatch(bodies[i], rq.Batch, handoff.TargetFor(p.Worker, dc.Worker, d.cfg.DPAware), nil)
				o, err := d.openParallel(lctx, rq, legs, p, dc, hdr)
				if err != nil {
					return err
				}
				opens[i] = o
				return nil
			}()
			if err != nil {
				mu.Lock()
				if first == nil {
					first = err
				}
				mu.Unlock()
				fcancel()
			}
		})
	}
	wg.Wait()
	defer func() {
		for _, o := range opens {
			if o != nil {
				d.finish(o, committed)
			}
		}
		for _, rel := range releases {
			rel()
		}
	}()
	if first != nil {
		for _, o := range opens {
			if o != nil {
				o.cancel(nil)
			}
		}
		return false, first
	}
	if rq.Logprobs {
		for _, o := range opens {
			if f := o.awaitPrefill(); f != nil {
				return false, f
			}
		}
	}
	if rq.Stream {
		d.fanInStream(w, rq, opens, fcancel)
		return true, nil
	}
	return d.fanInBodies(w, rq, opens)
}

// fanInBodies reads every sample's decode body and merges them (handoff.MergeSamples).
func (d *Dispatcher) fanInBodies(w http.ResponseWriter, rq *handoff.Request, opens []*open) (bool, error) {
	bodies := make([][]byte, len(opens))
	for i, o := range opens {
		b, err := io.ReadAll(io.LimitReader(o.decodeResp.Body, d.cfg.MaxPayloadSize))
		o.dtimer.stop()
		d.legEnded(o, o.decode, o.decodeResp.Status, err)
		if err != nil {
			return false, &errs.Error{Status: http.StatusBadGateway, Code: "decode_read_failed", Leg: "decode",
				Message: "Failed to read decode response of sample " + strconv.Itoa(i) + ": " + err.Error()}
		}
		if o.prefillLogprobs != nil {
			b, _ = handoff.MergeLogprobs(o.prefillLogprobs, b)
		}
		bodies[i] = b
	}
	d.metrics.ObserveTTFT(opens[0].model, opens[0].runtime, time.Since(opens[0].start))
	out, err := handoff.MergeSamples(rq.Route, bodies)
	if err != nil {
		return false, &errs.Error{Status: http.StatusBadGateway, Code: "sample_merge_failed",
			Message: "could not merge the n>1 sample responses: " + err.Error()}
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(out)))
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(out)
	return true, nil
}

// fanInStream interleaves the samples' decode streams into one SSE stream through
// handoff.FanIn: choices re-indexed, usage merged into one final chunk, one [DONE] at the
// end. A sample that fails after the head was sent ends the stream with an error event and
// cancels the others.
func (d *Dispatcher) fanInStream(w http.ResponseWriter, rq *handoff.Request, opens []*open, cancelAll context.CancelFunc) {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	_ = rc.Flush()

	fan := handoff.NewFanIn(rq.Route, len(opens))
	var mu sync.Mutex
	failed := false
	firstOut := true
	write := func(b []byte) bool {
		mu.Lock()
		defer mu.Unlock()
		if failed {
			return false
		}
		if firstOut {
			firstOut = false
			d.metrics.ObserveTTFT(opens[0].model, opens[0].runtime, time.Since(opens[0].start))
		}
		if _, err := w.Write(b); err != nil {
			failed = true
			cancelAll()
			return false
		}
		if err := rc.Flush(); err != nil {
			failed = true
			cancelAll()
			return false
		}
		return true
	}
	fail := func(b []byte) {
		mu.Lock()
		defer mu.Unlock()
		if failed {
			return
		}
		failed = true
		_, _ = w.Write(b)
		_ = rc.Flush()
		cancelAll()
	}
	var wg sync.WaitGroup
	for i, o := range opens {
		wg.Go(func() {
			split := &handoff.EventSplitter{}
			bp := getRelayBuf()
			defer putRelayBuf(bp)
			buf := *bp
			for {
				n, rerr := o.decodeResp.Body.Read(buf)
				if n > 0 {
					o.dtimer.stop()
					o.decodeOut.Store(true)
					if err := split.Write(buf[:n]); err != nil {
						fail(handoff.StreamError(&errs.Error{Status: http.StatusBadGateway, Code: "decode_stream_failed", Message: err.Error()}))
						return
					}
					for {
						ev, ok := split.Next()
						if !ok {
							break
						}
						if o.prefillLogprobs != nil {
							ev, _ = handoff.MergeLogprobsEvent(o.prefillLogprobs, ev)
						}
						out, kind := fan.Event(i, ev)
						switch kind {
						case handoff.EventForward:
							if !write(out) {
								return
							}
						case handoff.EventDone:
							d.legEnded(o, o.decode, o.decodeResp.Status, nil)
							return
						case handoff.EventError:
							fail(append(append([]byte(nil), out...), handoff.DoneEvent...))
							return
						}
					}
				}
				if rerr != nil {
					if errors.Is(rerr, io.EOF) {
						d.legEnded(o, o.decode, 0, io.ErrUnexpectedEOF)
					} else {
						d.legEnded(o, o.decode, 0, rerr)
					}
					msg := "decode stream of sample " + strconv.Itoa(i) + " ended before [DONE]"
					if !errors.Is(rerr, io.EOF) {
						msg = "decode stream of sample " + strconv.Itoa(i) + " failed: " + rerr.Error()
					}
					fail(handoff.StreamError(&errs.Error{Status: http.StatusBadGateway, Code: "decode_stream_failed", Message: msg, Leg: "decode"}))
					return
				}
			}
		})
	}
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	if failed {
		return
	}
	if fin := fan.Final(); fin != nil {
		_, _ = w.Write(fin)
	}
	_, _ = w.Write([]byte(handoff.DoneEvent))
	_ = rc.Flush()
}
