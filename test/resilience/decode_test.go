package resilience_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/app/config"
	"github.com/smg-go/smg/test/fleet"
	"github.com/smg-go/smg/test/sim"
)

// A decode that refuses connections: 502 decode_request_failed after every attempt, each
// prefill leg (waiting for the decode's claim) cancelled. Ten transport failures open the
// decode's breaker; it is the only decode, so the leg is in panic mode: the next request
// still goes to it and gets its 502, never a prefill-only dispatch.
func TestDecodeRefuses(t *testing.T) {
	t.Parallel()
	pre := fleet.StartSim(t, sim.Config{Engine: sim.EngineSGLang, Role: sim.RolePrefill})
	g := fleet.StartGateway(t, fleet.DefaultConfig())
	g.Register(t, fleet.WorkerSpec(pre))
	spec := refusingWorker(t, "decode", nil)
	g.Register(t, spec)
	g.WaitWorkers(t, 2)

	for range 2 { // 2 × 5 attempts = --cb-failure-threshold 10
		r := g.Post(t, "/generate", generate("refused decode", 4, true), nil)
		assert.Less(t, r.Elapsed, bound, "hang guard")
		assert.Contains(t, requireError(t, r, http.StatusBadGateway, "decode_request_failed"), "connection refused")
	}
	waitIdle(t, pre)
	cancelledOnly(t, pre, "prefill")
	state, ok, fail := cb(t, g, spec["url"].(string))
	assert.Equal(t, []float64{1, 0, 10}, []float64{state, ok, fail}, "the decode's breaker opened")
	state, ok, fail = cb(t, g, pre.URL())
	assert.Equal(t, []float64{0, 0, 0}, []float64{state, ok, fail}, "cancelled prefill legs record nothing")

	r := g.Post(t, "/generate", generate("decode breaker open", 4, true), nil)
	assert.Less(t, r.Elapsed, bound, "hang guard")
	assert.Contains(t, requireError(t, r, http.StatusBadGateway, "decode_request_failed"), "connection refused")
	waitIdle(t, pre)
	cancelledOnly(t, pre, "prefill")
}

// A decode answering 4xx to a streaming request: nothing was streamed yet, so the client
// gets the decode's status as a JSON error (decode_bad_request), not retried; the prefill
// leg (it has arrived: the decode answers after a short delay) is cancelled.
func TestDecode4xxOnAStream(t *testing.T) {
	t.Parallel()
	f := sglang(t, 1, 1, nil)
	r := f.Gateway.Post(t, "/v1/chat/completions", chat("decode 400", 4, true, "decode:slow-first-byte:100", "decode:status:400"), nil)
	assert.Less(t, r.Elapsed, bound, "hang guard")
	assert.Contains(t, requireError(t, r, http.StatusBadRequest, "decode_bad_request"), "sim fault: injected status 400")

	waitIdle(t, f.Sims()...)
	assert.Equal(t, int64(1), f.Decodes[0].Stats().Requests, "a 4xx is never retried")
	assert.Equal(t, int64(1), f.Prefills[0].Stats().Requests)
	cancelledOnly(t, f.Prefills[0], "prefill")
	state, ok, fail := cb(t, f.Gateway, f.Decodes[0].URL())
	assert.Equal(t, []float64{0, 1, 0}, []float64{state, ok, fail}, "a 4xx is a success for the breaker")
}

// A decode that dies mid-stream: the client keeps the chunks already relayed, then gets one
// error event (decode_stream_failed) and [DONE], never a silent truncation; the decode's
// breaker records a failure. The prefill had completed its handoff and is not aborted.
// Non-streaming, the cut body becomes 502 decode_read_failed instead of a truncated 200.
func TestDecodeDiesMidStream(t *testing.T) {
	t.Parallel()
	f := sglang(t, 1, 1, nil)

	s := f.Gateway.Stream(t, "/v1/chat/completions", chat("decode dies", 8, true, "decode:die-after:3"))
	assert.Less(t, s.Elapsed, bound, "hang guard")
	require.Equal(t, http.StatusOK, s.Status)
	assert.Equal(t, "text/event-stream", s.Header.Get("Content-Type"))
	e := streamError(t, s.Events, "server_error", "decode_stream_failed")
	assert.Contains(t, e["message"], "decode stream")
	got := chatStreamText(t, s.Events)
	full := chatText("decode dies", 8)
	assert.NotEmpty(t, got)
	assert.True(t, strings.HasPrefix(full, got), "the relayed part is the start of the real output: %q vs %q", got, full)
	assert.NotEqual(t, full, got)

	waitIdle(t, f.Sims()...)
	p := f.Prefills[0].Stats()
	assert.Equal(t, []int64{1, 1, 0, 0}, []int64{p.Requests, p.HandoffsSent, p.Aborted, p.Errors}, "the prefill finished normally")
	_, ok, fail := cb(t, f.Gateway, f.Decodes[0].URL())
	assert.Equal(t, []float64{0, 1}, []float64{ok, fail}, "a broken stream is a decode failure")
	// The prefill is drained in the background once the client's stream ended: its outcome
	// comes when the gateway has read its body, which can be after the sim went idle.
	cbSettled(t, f.Gateway, f.Prefills[0].URL(), []float64{0, 1, 0}, "the prefill's drain ended well (recorded when it ends)")

	f.Reset()
	r := f.Gateway.Post(t, "/v1/chat/completions", chat("decode dies", 8, false, "decode:die-after:3"), nil)
	assert.Less(t, r.Elapsed, bound, "hang guard")
	requireError(t, r, http.StatusBadGateway, "decode_read_failed")
	assert.Equal(t, int64(1), f.Decodes[0].Stats().Requests, "the decode leg already ran: no retry")
	_, _, fail = cb(t, f.Gateway, f.Decodes[0].URL())
	assert.Equal(t, float64(2), fail)
}

// Malformed engine JSON (vLLM, sequential): a decode whose 200 body does not parse becomes
// 502 decode_invalid_response (a decode failure, not retried: the decode leg ran); a
// prefill whose body does not parse fails the attempt with 502 prefill_invalid_response and
// is retried, and no decode leg is ever sent (no silent recompute). A garbled stream event
// is never relayed: the stream ends with a decode_invalid_response error event and [DONE],
// and counts as a decode failure. smg_worker_errors_total counts each as a backend_error.
func TestMalformedEngineJSON(t *testing.T) {
	t.Parallel()
	f := fleet.Start(t, fleet.Spec{Engine: sim.EngineVLLM, Prefills: 1, Decodes: 1})
	p, d := f.Prefills[0], f.Decodes[0]

	r := f.Gateway.Post(t, "/v1/chat/completions", chat("garbled decode", 4, false, "decode:malformed"), nil)
	assert.Less(t, r.Elapsed, bound, "hang guard")
	assert.Contains(t, requireError(t, r, http.StatusBadGateway, "decode_invalid_response"), "not valid JSON")
	waitIdle(t, f.Sims()...)
	assert.Equal(t, int64(1), d.Stats().Requests)
	_, ok, fail := cb(t, f.Gateway, d.URL())
	assert.Equal(t, []float64{0, 1}, []float64{ok, fail})

	f.Reset()
	r = f.Gateway.Post(t, "/v1/chat/completions", chat("garbled prefill", 4, false, "prefill:malformed"), nil)
	assert.Less(t, r.Elapsed, bound, "hang guard")
	assert.Contains(t, requireError(t, r, http.StatusBadGateway, "prefill_invalid_response"), "not valid JSON")
	waitIdle(t, f.Sims()...)
	assert.Equal(t, int64(2), p.Stats().Requests, "retried once: the same failure on the same prefill ends it")
	assert.Zero(t, d.Stats().Requests, "the decode was never contacted")
	assert.Zero(t, f.Gateway.Metrics(t).Sum("smg_pd_kv_transfer_failures_total"), "not counted as a handoff without params")
	_, ok, fail = cb(t, f.Gateway, p.URL())
	assert.Equal(t, []float64{1, 1}, []float64{ok, fail}, "one success from the first request, then one failure for the garbled one")
	_, ok, fail = cb(t, f.Gateway, d.URL())
	assert.Equal(t, []float64{0, 1}, []float64{ok, fail}, "sequential: prefill failures never reach the decode's breaker")

	f.Reset()
	s := f.Gateway.Stream(t, "/v1/chat/completions", chat("garbled stream", 4, true, "decode:malformed"))
	assert.Less(t, s.Elapsed, bound, "hang guard")
	require.Equal(t, http.StatusOK, s.Status)
	streamError(t, s.Events, "server_error", "decode_invalid_response")
	assert.NotContains(t, string(s.Body), `"sim-malformed"`, "the garbled event is not relayed")
	waitIdle(t, f.Sims()...)
	assert.Equal(t, int64(1), d.Stats().Requests, "not retried: the stream was committed")
	_, ok, fail = cb(t, f.Gateway, d.URL())
	assert.Equal(t, []float64{0, 2}, []float64{ok, fail}, "a decode failure")

	// The engines answered, garbled: backend errors (the gateway's 502), not connection errors.
	m := f.Gateway.Metrics(t)
	assert.Equal(t, 2.0, m.Sum("smg_worker_errors_total", "worker_type", "decode", "error_type", "backend_error"))
	assert.Equal(t, 1.0, m.Sum("smg_worker_errors_total", "worker_type", "prefill", "error_type", "backend_error"), "counted with the breaker: once per request")
	assert.Zero(t, m.Sum("smg_worker_errors_total", "error_type", "connection_error"))
}

// Time bounds on a decode stream: no first output within --first-byte-timeout-secs (the
// decode sent its head at once, as real engines do, and then nothing) fails the attempt
// before anything reached the client: 504 decode_first_byte_timeout, one unresponsive
// failure on the decode's breaker, not retried onto the same unresponsive decode (there is
// no other); the prefill ended well and is not charged. The request timeout
// mid-stream ends a committed stream with a 504 request_timeout event and charges no
// breaker (the gateway cut the leg).
func TestDecodeStreamTimeBounds(t *testing.T) {
	t.Parallel()
	start := func(t *testing.T, gw func(*config.Config), itl time.Duration) *fleet.Fleet {
		return fleet.Start(t, fleet.Spec{Engine: sim.EngineSGLang, Prefills: 1, Decodes: 1, Gateway: gw,
			Sim: func(role string, _ int, sc *sim.Config) {
				if role == sim.RoleDecode {
					sc.ITL = itl
				}
			}})
	}
	t.Run("first byte", func(t *testing.T) {
		t.Parallel()
		const deadline = 300 * time.Millisecond
		f := start(t, func(c *config.Config) { c.FirstByteTimeout = deadline }, 0)
		r := f.Gateway.Post(t, "/v1/chat/completions", chat("bounded stream", 500, true, "decode:delay-body:20000"), nil)
		assertDecodeTimedOut(t, f, r, "decode_first_byte_timeout", "--first-byte-timeout-secs (0.3s)", deadline)
	})
	t.Run("request timeout mid-stream", func(t *testing.T) {
		t.Parallel()
		f := start(t, func(c *config.Config) { c.RequestTimeout = time.Second }, 20*time.Millisecond)
		s := f.Gateway.Stream(t, "/v1/chat/completions", chat("bounded stream", 500, true))
		assert.Less(t, s.Elapsed, bound, "hang guard")
		require.Equal(t, http.StatusOK, s.Status)
		streamError(t, s.Events, "server_error", "request_timeout")

		waitIdle(t, f.Sims()...)
		d := f.Decodes[0].Stats()
		assert.Equal(t, []int64{1, 1}, []int64{d.Requests, d.Aborted}, "the decode leg was cancelled: %+v", d)
		_, ok, fail := cb(t, f.Gateway, f.Decodes[0].URL())
		assert.Equal(t, []float64{0, 0}, []float64{ok, fail})
	})
}

// A non-streaming decode that sends its head and then stalls its body is bounded by
// --decode-timeout-secs like one that sends nothing: 504 decode_timeout, the decode leg
// cancelled, one unresponsive failure on the decode's breaker, none on the prefill's.
// Before, the deadline stopped at the head and only --request-timeout-secs (1800 s) ended
// the leg.
func TestDecodeBodyStallIsBoundedByTheDecodeDeadline(t *testing.T) {
	t.Parallel()
	for _, engine := range []string{sim.EngineSGLang, sim.EngineVLLM} {
		t.Run(engine, func(t *testing.T) {
			t.Parallel()
			const deadline = 300 * time.Millisecond
			f := fleet.Start(t, fleet.Spec{Engine: engine, Prefills: 1, Decodes: 1,
				Gateway: func(c *config.Config) { c.DecodeTimeout = deadline }})
			r := f.Gateway.Post(t, "/v1/chat/completions", chat("stalled body", 8, false, "decode:delay-body:20000"), nil)
			assertDecodeTimedOut(t, f, r, "decode_timeout", "--decode-timeout-secs (0.3s)", deadline)
		})
	}
}

// assertDecodeTimedOut checks the whole outcome of a decode that missed its deadline in a
// 1P1D fleet: a 504 with code naming flagText, answered after the deadline and before a
// second one (no retry waited), the decode leg cancelled, one unresponsive failure on the
// decode's breaker and none on the prefill's, which answered.
func assertDecodeTimedOut(t *testing.T, f *fleet.Fleet, r *fleet.Response, code, flagText string, deadline time.Duration) {
	t.Helper()
	assert.Contains(t, requireError(t, r, http.StatusGatewayTimeout, code), flagText)
	assert.GreaterOrEqual(t, r.Elapsed, deadline, "the attempt waited out its deadline")
	assert.Less(t, r.Elapsed, deadline+time.Second, "and no retry waited out another")

	waitIdle(t, f.Sims()...)
	d := f.Decodes[0].Stats()
	assert.Equal(t, []int64{1, 1}, []int64{d.Requests, d.Aborted}, "the decode leg was cancelled: %+v", d)
	state, ok, fail := cb(t, f.Gateway, f.Decodes[0].URL())
	assert.Equal(t, []float64{0, 0, 1}, []float64{state, ok, fail}, "one unresponsive failure")
	state, ok, fail = cb(t, f.Gateway, f.Prefills[0].URL())
	assert.Equal(t, []float64{0, 1, 0}, []float64{state, ok, fail}, "the prefill answered")
}
