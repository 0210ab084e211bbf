package dispatch

import (
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/domain/errs"
	"github.com/smg-go/smg/domain/policy"
	"github.com/smg-go/smg/domain/worker"
)

func live(id string) *worker.Live {
	return worker.NewLive(worker.Worker{ID: id, URL: "http://" + id}, worker.StatusReady)
}

// decode500 is a vLLM decode's 500 after a KV handoff from p, whose 200 is held: ambiguous
// with p.
func decode500(p, dc *worker.Live) *legFault {
	return kvLoadFault(&legFault{w: dc, status: http.StatusInternalServerError,
		e: decodeError(http.StatusInternalServerError, []byte(`{"error":{"message":"Internal server error"}}`))}, p, &heldOutcome{w: p, status: http.StatusOK, at: answered})
}

// answered is when the held prefill answers in these tests.
var answered = time.Unix(1000, 0)

// The retry after a decode's 500 that followed a KV handoff keeps the decode and avoids
// the prefill; what happens next decides whom the failure is charged to, with its status.
func TestKVLoadFaultIsSettledByTheRetry(t *testing.T) {
	p1, p2, d1, d2 := live("p1"), live("p2"), live("d1"), live("d2")

	t.Run("another prefill succeeds on the same decode: the first prefill", func(t *testing.T) {
		tr, preq := &tries{}, &policy.Request{}
		assert.Empty(t, tr.failed(decode500(p1, d1), preq), "nothing charged until settled")
		assert.Equal(t, "http://d1", preq.PinDecode)
		assert.Equal(t, []string{"http://p1"}, preq.Avoid)
		assert.False(t, tr.samePair(p1, d1), "an answer, not a silence: the same pair may be retried")
		tr.prefill, tr.decode = p2.URL, d1.URL
		f := tr.settle(true)
		require.NotNil(t, f)
		assert.Same(t, p1, f.w)
		assert.Equal(t, http.StatusInternalServerError, f.status, "charged as the 500 it was")
		assert.Nil(t, f.held, "the prefill's answer handed off lost KV: not a success")
		assert.Empty(t, tr.hung, "a 500 is no hang")
	})
	t.Run("the same pair succeeds: the decode (a transient failure)", func(t *testing.T) {
		tr, preq := &tries{}, &policy.Request{}
		tr.failed(decode500(p1, d1), preq)
		tr.prefill, tr.decode = p1.URL, d1.URL
		f := tr.settle(true)
		assert.Same(t, d1, f.w)
		assert.Equal(t, &heldOutcome{w: p1, status: http.StatusOK, at: answered}, f.held, "the prefill's success goes with it")
	})
	t.Run("the kept decode fails again with another prefill: the decode, once", func(t *testing.T) {
		tr, preq := &tries{}, &policy.Request{}
		tr.failed(decode500(p1, d1), preq)
		got := tr.failed(decode500(p2, d1), preq)
		require.Len(t, got, 1)
		assert.Same(t, d1, got[0].w)
		assert.Equal(t, http.StatusInternalServerError, got[0].status)
		assert.Equal(t, &heldOutcome{w: p2, status: http.StatusOK, at: answered}, got[0].held)
		assert.Equal(t, []*heldOutcome{{w: p1, status: http.StatusOK, at: answered}}, tr.held, "both prefills answered well")
		assert.Contains(t, preq.Avoid, "http://d1")
		assert.Empty(t, preq.PinDecode)
		assert.Empty(t, tr.hung)
		assert.Nil(t, tr.settle(false), "nothing left pending")
	})
	t.Run("the request fails elsewhere: the decode that reported it", func(t *testing.T) {
		tr, preq := &tries{}, &policy.Request{}
		tr.failed(decode500(p1, d1), preq)
		tr.prefill, tr.decode = p2.URL, d2.URL
		f := tr.settle(false)
		assert.Same(t, d1, f.w)
		assert.Equal(t, &heldOutcome{w: p1, status: http.StatusOK, at: answered}, f.held)
	})
	t.Run("a silent pair still may not be retried as it was", func(t *testing.T) {
		tr, preq := &tries{}, &policy.Request{}
		f := &legFault{w: d1, cause: unresponsive("decode deadline"), e: &errs.Error{Leg: "decode", Code: "decode_timeout"}}
		f.ambiguous, f.peer = true, p1
		tr.failed(f, preq)
		assert.True(t, tr.samePair(p1, d1))
	})
}

type recorded struct {
	w      *worker.Live
	status int
}

type fakeOutcomes struct{ got []recorded }

func (f *fakeOutcomes) Record(w *worker.Live, status int, _ error) {
	f.got = append(f.got, recorded{w, status})
}

// A held prefill success is recorded unless the prefill failed after it answered: a
// prefill that died after answering must not have the failure streak that ejects it reset
// by answers it gave before.
func TestHeldPrefillSuccessIsDroppedWhenThePrefillFailedSince(t *testing.T) {
	rec := &fakeOutcomes{}
	d := &Dispatcher{outcomes: rec}
	p := live("p1")
	o := &open{prefill: p, held: &heldOutcome{w: p, status: http.StatusOK, at: answered}}
	p.NoteFailure(answered.Add(-time.Second))
	d.releasePrefill(o)
	assert.Equal(t, []recorded{{p, http.StatusOK}}, rec.got, "a failure before the answer does not matter")
	assert.Nil(t, o.held, "released once")
	d.releasePrefill(o)
	assert.Len(t, rec.got, 1)

	rec.got = nil
	o = &open{prefill: p, held: &heldOutcome{w: p, status: http.StatusOK, at: answered}}
	p.NoteFailure(answered.Add(time.Millisecond))
	d.releasePrefill(o)
	assert.Empty(t, rec.got, "it failed after answering: the stale success is dropped")
	d.recordHeld(&heldOutcome{w: p, status: http.StatusOK, at: answered})
	assert.Empty(t, rec.got, "a success held by a fault is dropped the same way")
}

// The blame ledger counts a leg's failure once per request: the same code again, on the
// same worker or another, is the request's (not recorded, not retried); another code, or a
// deadline on the same worker, is not a repeat.
func TestBlameLedgerCountsARepeatOnce(t *testing.T) {
	p1, p2 := live("p1"), live("p2")
	f500 := func(w *worker.Live) *legFault {
		return &legFault{w: w, status: http.StatusInternalServerError,
			e: &errs.Error{Status: http.StatusInternalServerError, Code: "prefill_upstream_error", Leg: "prefill"}}
	}
	silent := func(w *worker.Live) *legFault {
		f := f500(w)
		f.status, f.cause, f.e = 0, unresponsive("prefill deadline"), &errs.Error{Status: http.StatusGatewayTimeout, Code: "prefill_timeout", Leg: "prefill"}
		return f
	}
	var l blameLedger
	assert.Equal(t, repeatNone, l.admit(f500(p1)), "first failure of the leg")
	assert.Equal(t, repeatSameWorker, l.admit(f500(p1)), "same code, same worker: counted already")
	assert.Equal(t, repeatOtherWorker, l.admit(f500(p2)), "same code, another worker")
	decode := f500(p1)
	decode.e = &errs.Error{Status: http.StatusInternalServerError, Code: "prefill_upstream_error", Leg: "decode"}
	assert.Equal(t, repeatNone, l.admit(decode), "the other leg has its own entry")

	var s blameLedger
	assert.Equal(t, repeatNone, s.admit(silent(p1)))
	assert.Equal(t, repeatNone, s.admit(silent(p1)), "two silences of one worker settled together are both its own")

	var r blameLedger
	refused := func() *legFault {
		return &legFault{w: p1, cause: errors.New("connection refused"),
			e: &errs.Error{Status: http.StatusBadGateway, Code: "prefill_request_failed", Leg: "prefill"}}
	}
	assert.Equal(t, repeatNone, r.admit(refused()))
	assert.Equal(t, repeatNone, r.admit(refused()), "a transport failure is the worker's on every attempt")
}
