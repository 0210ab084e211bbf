package e2e_test

import (
	"bufio"
	"context"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/app/config"
	"github.com/smg-go/smg/domain/wire"
	"github.com/smg-go/smg/test/fleet"
	"github.com/smg-go/smg/test/sim"
)

// failFast is the bound issue #4 states for a failed leg to reach the client ("within 1 s").
const failFast = time.Second

// Issue #4, Done when: streaming: the first decode chunk reaches the client before the
// prefill body has finished draining. The prefill sends its head at once and holds its body
// for 1.5 s after the KV went over; the decode stream arrives meanwhile.
func TestSGLangStreamStartsBeforeThePrefillDrains(t *testing.T) {
	t.Parallel()
	f := sglangFleet(t, 1, 1)
	body := apiChat.body("stream me before the prefill is done", 4, true)
	body["sim_fault"] = "prefill:delay-body:1500"
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	resp := f.Gateway.Open(t, ctx, apiChat.path, body)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))

	rd := bufio.NewReader(resp.Body)
	line, err := rd.ReadString('\n')
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(line, "data: {"), "first line is a decode chunk: %q", line)
	p := f.Prefills[0].Stats()
	assert.Equal(t, int64(1), p.Running, "the prefill is still holding its body when the first chunk arrives")
	assert.Equal(t, int64(1), f.Decodes[0].Stats().HandoffsReceived, "the KV already went over")

	rest, err := readAll(rd)
	require.NoError(t, err)
	events := fleet.ParseEvents(t, []byte(line+rest))
	require.NotEmpty(t, events)
	assert.True(t, events[len(events)-1].Done())
	assert.Equal(t, sim.HandoffText(userPrompt("stream me before the prefill is done"), 4), apiChat.streamText(t, events))
	waitIdle(t, f.Sims()...)
	assert.Zero(t, f.Prefills[0].Stats().Aborted, "the prefill body was drained, not cut")
}

func readAll(rd *bufio.Reader) (string, error) {
	var b strings.Builder
	_, err := rd.WriteTo(&b)
	return b.String(), err
}

// noRetries is a fleet option: one attempt per request, so a leg failure reaches the
// client as soon as the gateway sees it (the 1 s bound is about that, not about the
// --retry-* backoff schedule).
func noRetries(c *config.Config) { c.DisableRetries = true }

// Issue #4, Done when: prefill answers 500 → the client gets an error within 1 s and the
// decode sim counts an abort. The prefill waits 200 ms before answering, so the decode leg
// is surely waiting for its room when the prefill fails: its abort is deterministic.
func TestSGLangPrefill500AbortsTheDecode(t *testing.T) {
	t.Parallel()
	for _, stream := range []bool{false, true} {
		t.Run(streamName(stream), func(t *testing.T) {
			t.Parallel()
			f := fleet.Start(t, fleet.Spec{Engine: sim.EngineSGLang, Prefills: 1, Decodes: 1, Gateway: noRetries})
			body := apiGenerate.body("the prefill will fail", 4, stream)
			// The prefill holds its answer 400 ms, so the decode leg has surely reached its
			// engine (and waits for the room) when the 500 arrives, even on a busy machine.
			body["sim_fault"] = []string{"prefill:slow-first-byte:400", "prefill:status:500"}
			r := f.Gateway.Post(t, apiGenerate.path, body, nil)
			assert.Less(t, r.Elapsed, failFast, "hang guard")
			assertPrefill500(t, r)
			settled(t, f.Decodes[0], func(st sim.Stats) bool { return st.Aborted >= 1 })
			waitIdle(t, f.Sims()...)
			p, d := f.Prefills[0].Stats(), f.Decodes[0].Stats()
			assert.Equal(t, int64(1), p.Errors, "the prefill answered 500")
			assert.Equal(t, int64(1), d.Requests)
			assert.Equal(t, int64(1), d.Aborted, "the decode leg waiting for its room was cancelled")
			assert.Zero(t, d.HandoffsReceived+d.UnmatchedRooms)
		})
	}
}

// With the default retry settings a prefill 500 is retried on a fresh pair; the only
// prefill fails the same way again, which makes it the request's failure (counted once,
// not retried further), and the 500 is answered; every decode leg that reached its engine
// is aborted, none waits out its handoff timeout.
func TestSGLangPrefill500IsRetriedThenAnswered(t *testing.T) {
	t.Parallel()
	f := sglangFleet(t, 1, 1)
	body := apiGenerate.body("the prefill will fail", 4, false)
	body["sim_fault"] = "prefill:status:500"
	r := f.Gateway.Post(t, apiGenerate.path, body, nil)
	assert.Less(t, r.Elapsed, 5*time.Second, "hang guard")
	assertPrefill500(t, r)
	settled(t, f.Decodes[0], func(st sim.Stats) bool { return st.Requests == st.Aborted })
	p, d := f.Prefills[0].Stats(), f.Decodes[0].Stats()
	assert.Equal(t, int64(2), p.Errors, "one prefill 500 per attempt, two attempts")
	assert.Zero(t, d.HandoffsReceived+d.UnmatchedRooms)
	m := f.Gateway.Metrics(t)
	for _, leg := range []string{"prefill", "decode"} {
		assert.Equal(t, 1.0,
			m.Sum("smg_worker_retries_total", "worker_type", leg, "endpoint", "generate"), "every retry re-selects both legs")
		assert.Zero(t, m.Sum("smg_worker_retries_exhausted_total", "worker_type", leg, "endpoint", "generate"), "ended by the repeat, not exhausted")
	}
	assert.Equal(t, 1.0, m.Sum("smg_worker_retry_backoff_seconds_count"))
	state := m.Find("smg_worker_cb_state", "worker", f.Prefills[0].URL())
	require.Len(t, state, 1)
	assert.Zero(t, state[0].Value, "the prefill's breaker stays closed")
}

// settled waits (hang guard 5 s) until s runs nothing and cond holds on its counters. A leg
// the gateway cancelled may reach the engine after the client already has its answer, so
// counters are checked once they stop moving, not right after the response.
func settled(t *testing.T, s *sim.Server, cond func(sim.Stats) bool) {
	t.Helper()
	require.Eventually(t, func() bool {
		st := s.Stats()
		return st.Running == 0 && s.PendingHandoffs() == 0 && cond(st)
	}, 5*time.Second, 5*time.Millisecond, "%s %s never settled: %+v", s.Config().Engine, s.Config().Role, s.Stats())
}

func assertPrefill500(t *testing.T, r *fleet.Response) {
	t.Helper()
	require.Equal(t, http.StatusInternalServerError, r.Status, "%s", r.Body)
	assert.Equal(t, "application/json", r.Header.Get("Content-Type"))
	e := decodeError(t, r)
	assert.Equal(t, "server_error", e.Error.Type)
	assert.Equal(t, "prefill_upstream_error", e.Error.Code)
	assert.Equal(t, e.Error.Code, r.Header.Get(wire.HeaderErrorCode))
	assert.Contains(t, e.Error.Message, "sim fault: injected status 500")
}

func streamName(stream bool) string {
	if stream {
		return "stream"
	}
	return "json"
}

// Issue #4, Done when: decode refuses the connection → 502 within 1 s and the prefill leg is
// cancelled. The decode worker is registered on a port nobody listens on (health checks
// disabled so it stays routable).
func TestSGLangDecodeRefusedIs502AndCancelsThePrefill(t *testing.T) {
	t.Parallel()
	for _, retries := range []bool{false, true} {
		t.Run("retries="+strconv.FormatBool(retries), func(t *testing.T) {
			t.Parallel()
			pre := fleet.StartSim(t, sim.Config{Engine: sim.EngineSGLang, Role: sim.RolePrefill})
			cfg := fleet.DefaultConfig()
			cfg.DisableRetries = !retries
			g := fleet.StartGateway(t, cfg)
			g.Register(t, fleet.WorkerSpec(pre))
			g.Register(t, map[string]any{"url": "http://" + closedAddr(t), "worker_type": "decode", "runtime_type": "sglang",
				"health": map[string]any{"disable_health_check": true}})
			// The closed-port decode is never detected (no model_id): wait for health only.
			g.WaitUntil(t, "both workers healthy, the prefill detected", func(ws []fleet.WorkerInfo) bool {
				ok := 0
				for _, w := range ws {
					if w.IsHealthy && (w.WorkerType == "decode" || w.ModelID != "") {
						ok++
					}
				}
				return ok == 2
			})

			r := g.Post(t, apiChat.path, apiChat.body("nobody decodes this", 4, false), nil)
			if retries {
				assert.Less(t, r.Elapsed, 5*time.Second, "hang guard (five attempts with backoff)")
			} else {
				assert.Less(t, r.Elapsed, failFast, "hang guard")
			}
			require.Equal(t, http.StatusBadGateway, r.Status, "%s", r.Body)
			e := decodeError(t, r)
			assert.Equal(t, "decode_request_failed", e.Error.Code)
			assert.Equal(t, "decode_request_failed", r.Header.Get(wire.HeaderErrorCode))
			// Every prefill leg that reached the engine was aborted at once, not left waiting
			// HandoffTimeout (30 s) for a decode that will never claim its room. A cancelled
			// leg may still be arriving when the client has its 502: wait for it to settle.
			settled(t, pre, func(st sim.Stats) bool { return st.Requests == st.Aborted })
			assert.Zero(t, pre.Stats().HandoffsSent+pre.Stats().UnmatchedRooms)
		})
	}
}

// A decode that dies after the prefill leg is in flight (it waits 300 ms, then resets the
// connection) also cancels the prefill: deterministic proof that the prefill sim counts the
// abort.
func TestSGLangDecodeResetCancelsThePrefillInFlight(t *testing.T) {
	t.Parallel()
	f := fleet.Start(t, fleet.Spec{Engine: sim.EngineSGLang, Prefills: 1, Decodes: 1, Gateway: noRetries})
	body := apiChat.body("the decode dies", 4, false)
	body["sim_fault"] = []string{"decode:slow-first-byte:300", "decode:reset"}
	r := f.Gateway.Post(t, apiChat.path, body, nil)
	assert.Less(t, r.Elapsed, 5*time.Second, "hang guard")
	require.Equal(t, http.StatusBadGateway, r.Status, "%s", r.Body)
	assert.Equal(t, "decode_request_failed", decodeError(t, r).Error.Code)
	waitIdle(t, f.Sims()...)
	p := f.Prefills[0].Stats()
	assert.Equal(t, int64(1), p.Requests)
	assert.Equal(t, int64(1), p.Aborted, "the prefill leg was cancelled")
	assert.Zero(t, p.HandoffsSent)
}

// closedAddr returns 127.0.0.1:<port> of a listener that was closed: connecting is refused.
func closedAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	return addr
}

// Issue #4 item 8: a decode error after the stream started becomes an SSE error event
// followed by [DONE]; a decode that dies mid-body on a non-streaming request is a 502, never
// a truncated 200; a decode error status passes through with the decode's code.
func TestSGLangDecodeFailuresAfterAndBeforeTheHead(t *testing.T) {
	t.Parallel()
	f := fleet.Start(t, fleet.Spec{Engine: sim.EngineSGLang, Prefills: 1, Decodes: 1, Gateway: noRetries})

	body := apiChat.body("the decode dies mid-stream", 6, true)
	body["sim_fault"] = "decode:die-after:2"
	s := f.Gateway.Stream(t, apiChat.path, body)
	require.Equal(t, http.StatusOK, s.Status, "%s", s.Body)
	require.GreaterOrEqual(t, len(s.Events), 3, "%s", s.Body)
	n := len(s.Events)
	assert.True(t, s.Events[n-1].Done(), "[DONE] last: %s", s.Body)
	require.True(t, s.Events[n-2].IsError(), "an error event before [DONE]: %s", s.Body)
	assert.Equal(t, "decode_stream_failed", str(t, s.Events[n-2].JSON(t), "error", "code"))
	assert.Len(t, s.Errors(), 1)

	body = apiChat.body("the decode dies mid-body", 6, false)
	body["sim_fault"] = "decode:die-after:2"
	r := f.Gateway.Post(t, apiChat.path, body, nil)
	require.Equal(t, http.StatusBadGateway, r.Status, "%s", r.Body)
	assert.Equal(t, r.Header.Get(wire.HeaderErrorCode), decodeError(t, r).Error.Code)

	body = apiChat.body("the decode is overloaded", 6, false)
	body["sim_fault"] = []string{"decode:slow-first-byte:200", "decode:status:503"}
	r = f.Gateway.Post(t, apiChat.path, body, nil)
	require.Equal(t, http.StatusServiceUnavailable, r.Status, "%s", r.Body)
	assert.Equal(t, "decode_unavailable", decodeError(t, r).Error.Code)
	assert.Equal(t, "decode_unavailable", r.Header.Get(wire.HeaderErrorCode))

	waitIdle(t, f.Sims()...)
	p := f.Prefills[0].Stats()
	assert.Equal(t, int64(3), p.Requests)
	assert.Equal(t, int64(1), p.Aborted, "the prefill waiting for the refusing decode was cancelled")
	assert.Zero(t, p.UnmatchedRooms)
}

// Issue #4 item 8: a client that goes away mid-stream cancels the decode leg at once (the
// decode sim counts an abort instead of generating 200 tokens for nobody).
func TestSGLangClientGoneCancelsTheDecode(t *testing.T) {
	t.Parallel()
	f := fleet.Start(t, fleet.Spec{Engine: sim.EngineSGLang, Prefills: 1, Decodes: 1,
		Sim: func(role string, _ int, c *sim.Config) {
			if role == sim.RoleDecode {
				c.ITL = 20 * time.Millisecond
			}
		}})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	resp := f.Gateway.Open(t, ctx, apiChat.path, apiChat.body("a long answer nobody reads", 200, true))
	require.Equal(t, http.StatusOK, resp.StatusCode)
	_, err := bufio.NewReader(resp.Body).ReadString('\n')
	require.NoError(t, err)
	cancel()
	waitIdle(t, f.Sims()...)
	d := f.Decodes[0].Stats()
	assert.Equal(t, int64(1), d.Aborted, "decode leg cancelled: %+v", d)
	assert.Less(t, d.GenerationTokens, int64(200))
}
