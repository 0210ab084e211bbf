package shutdown_test

import (
	"encoding/json"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/test/fleet"
	"github.com/smg-go/smg/test/sim"
)

// Timings of the suite. A decode token takes itl, so a request for longTokens outlasts the
// whole drain by far and one for shortTokens ends well inside the drain delay.
const (
	itl         = 50 * time.Millisecond
	longTokens  = 1200 // 60 s
	shortTokens = 3    // 0.1 s
	drainDelay  = time.Second
	grace       = 2 * time.Second
	// slack is how late (after its due moment) an event may come on a loaded 2-core CI
	// machine; earliness is bounded tightly.
	slack = 1500 * time.Millisecond
)

// SIGTERM with 20 streams and 3 non-streaming chat completions open (SGLang parallel and
// vLLM sequential dispatch), --shutdown-drain-delay-secs 1
// and --shutdown-grace-period-secs 2: /readiness answers 503 "draining" at once; a new
// request during the drain delay is served; after it the listener is closed; at the grace
// deadline (drain delay + grace after SIGTERM) every stream ends with the gateway's error
// event (503 server_shutting_down) and data: [DONE], every non-streaming request gets 503
// server_shutting_down in the seed's error shape, the decode legs are cancelled (sim
// counters), and smg exits 3 because requests were cut.
func TestSIGTERMCutsWhatOutlastsTheGracePeriod(t *testing.T) {
	t.Parallel()
	for _, engine := range []string{sim.EngineSGLang, sim.EngineVLLM} {
		t.Run(engine, func(t *testing.T) {
			t.Parallel()
			testCut(t, engine)
		})
	}
}

func testCut(t *testing.T, engine string) {
	prefill, decode := startFleet(t, engine, itl)
	g := launch(t, prefill, decode, "--shutdown-drain-delay-secs", "1", "--shutdown-grace-period-secs", "2")
	c := newClient()
	defer c.CloseIdleConnections()

	const nStreams, nPlain = 20, 3
	var streams, plain []*call
	for range nStreams {
		streams = append(streams, send(c, g.URL, chatPath, chat(longTokens, true)))
	}
	for range nPlain {
		plain = append(plain, send(c, g.URL, chatPath, chat(longTokens, false)))
	}
	started := make([]chan struct{}, 0, nStreams)
	for _, s := range streams {
		started = append(started, s.Started)
	}
	waitAll(t, "streams streaming", startTimeout, started...)
	waitFor(t, "every request running on the decode", startTimeout, func() bool {
		return decode.Stats().Running == nStreams+nPlain
	})
	decode.Reset()

	t0 := g.sigterm(t)
	probe := newClient()
	defer probe.CloseIdleConnections()
	waitFor(t, "/readiness draining", 2*time.Second, func() bool {
		st, reason := readiness(probe, g.URL)
		return st == http.StatusServiceUnavailable && reason == "draining"
	})
	readyAfter := time.Since(t0)
	assert.Less(t, readyAfter, 500*time.Millisecond, "/readiness answers 503 at once after SIGTERM")

	// A new request (new connection) during the drain delay is still served.
	fresh := newClient()
	defer fresh.CloseIdleConnections()
	sentAt := time.Since(t0)
	r := send(fresh, g.URL, chatPath, chat(shortTokens, false))
	waitAll(t, "request during the drain delay", reqTimeout, r.Done)
	require.NoError(t, r.Err, "a request sent %s after SIGTERM (drain delay %s) is served", sentAt, drainDelay)
	assert.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
	assert.Less(t, sentAt, drainDelay, "the request above was sent inside the drain delay")

	// After the drain delay the listener is closed: new connections are refused.
	time.Sleep(time.Until(t0.Add(drainDelay + 500*time.Millisecond)))
	if conn, err := net.DialTimeout("tcp", g.Addr, time.Second); err == nil {
		conn.Close()
		t.Errorf("a new connection was accepted %s after SIGTERM (drain delay %s)", time.Since(t0), drainDelay)
	}

	all := make([]chan struct{}, 0, nStreams+nPlain)
	for _, k := range append(append([]*call{}, streams...), plain...) {
		all = append(all, k.Done)
	}
	waitAll(t, "cut requests", exitTimeout, all...)
	due := t0.Add(drainDelay + grace)
	for i, s := range streams {
		require.NoError(t, s.Err, "stream %d ended cleanly at the HTTP level", i)
		require.Equal(t, http.StatusOK, s.Status)
		evs := fleet.ParseEvents(t, s.Body)
		require.GreaterOrEqual(t, len(evs), 3, "stream %d: tokens, then the error event and [DONE]: %s", i, s.Body)
		last, errEv := evs[len(evs)-1], evs[len(evs)-2]
		assert.True(t, last.Done(), "stream %d ends with data: [DONE], got %q", i, last.Data)
		require.True(t, errEv.IsError(), "stream %d: the event before [DONE] is an error event, got %q", i, errEv.Data)
		assert.Equal(t, map[string]any{"type": "server_error", "code": "server_shutting_down",
			"message": "the gateway is shutting down (grace period over) while streaming the decode output", "param": nil},
			errEv.JSON(t)["error"], "stream %d", i)
		for _, e := range evs[:len(evs)-2] {
			assert.False(t, e.IsError() || e.Done(), "stream %d: one error event and one [DONE], at the end", i)
		}
		assertNear(t, "stream end", s.End, due)
	}
	for i, p := range plain {
		require.NoError(t, p.Err, "non-streaming request %d", i)
		assert.Equal(t, http.StatusServiceUnavailable, p.Status, "non-streaming request %d: %s", i, p.Body)
		assert.Equal(t, "server_shutting_down", p.Header.Get("X-SMG-Error-Code"))
		assert.Equal(t, "application/json", p.Header.Get("Content-Type"))
		var body struct {
			Error struct {
				Type  string  `json:"type"`
				Code  string  `json:"code"`
				Msg   string  `json:"message"`
				Param *string `json:"param"`
			} `json:"error"`
		}
		require.NoError(t, json.Unmarshal(p.Body, &body), "%s", p.Body)
		assert.Equal(t, "server_error", body.Error.Type)
		assert.Equal(t, "server_shutting_down", body.Error.Code)
		assert.Contains(t, body.Error.Msg, "the gateway is shutting down (grace period over)")
		assert.Nil(t, body.Error.Param)
		assertNear(t, "non-streaming answer", p.End, due)
	}

	code, exited := g.wait(t)
	assert.Equal(t, 3, code, "requests were cut: exit code 3")
	assertNear(t, "exit", exited, due)
	assert.Contains(t, g.out.String(), "smg: stop: shutdown grace period (--shutdown-grace-period-secs 2s) ended with 23 requests in flight")
	waitFor(t, "the decode legs cancelled", 5*time.Second, func() bool { return decode.Stats().Running == 0 })
	assert.Equal(t, int64(nStreams+nPlain), decode.Stats().Aborted, "every cut request's decode leg was cancelled, not left running")
	t.Logf("readiness 503 after %s; streams cut %s after SIGTERM (due %s); exit %s after SIGTERM",
		readyAfter, latest(streams).Sub(t0), due.Sub(t0), exited.Sub(t0))
}

// SIGTERM with 5 streams and 2 non-streaming requests that end during the grace period (1.5
// s each, past the 1 s drain delay, inside drain delay + grace): every request completes
// normally (200, streams end with [DONE] and no error event), and smg exits 0 once the last
// one is done — not at the grace deadline.
func TestSIGTERMDrainsCleanlyAndExitsZero(t *testing.T) {
	t.Parallel()
	prefill, decode := startFleet(t, sim.EngineSGLang, itl)
	g := launch(t, prefill, decode, "--shutdown-drain-delay-secs", "1", "--shutdown-grace-period-secs", "2")
	c := newClient()
	defer c.CloseIdleConnections()

	const tokens = 30 // 1.5 s
	var streams, plain []*call
	for range 5 {
		streams = append(streams, send(c, g.URL, chatPath, chat(tokens, true)))
	}
	for range 2 {
		plain = append(plain, send(c, g.URL, chatPath, chat(tokens, false)))
	}
	waitFor(t, "every request running on the decode", startTimeout, func() bool { return decode.Stats().Running == 7 })
	t0 := g.sigterm(t)

	all := make([]chan struct{}, 0, 7)
	for _, k := range append(append([]*call{}, streams...), plain...) {
		all = append(all, k.Done)
	}
	waitAll(t, "drained requests", exitTimeout, all...)
	for i, s := range streams {
		require.NoError(t, s.Err)
		require.Equal(t, http.StatusOK, s.Status, "stream %d: %s", i, s.Body)
		evs := fleet.ParseEvents(t, s.Body)
		require.NotEmpty(t, evs)
		assert.True(t, evs[len(evs)-1].Done(), "stream %d ends with [DONE]", i)
		for _, e := range evs {
			assert.False(t, e.IsError(), "stream %d has no error event: %q", i, e.Data)
		}
	}
	for i, p := range plain {
		require.NoError(t, p.Err)
		assert.Equal(t, http.StatusOK, p.Status, "non-streaming request %d: %s", i, p.Body)
	}
	code, exited := g.wait(t)
	assert.Equal(t, 0, code, "a clean drain exits 0")
	last := latest(append(streams, plain...))
	assert.GreaterOrEqual(t, exited.Sub(t0), drainDelay, "the listener stays open for the drain delay")
	assert.Less(t, exited.Sub(t0), drainDelay+grace, "exit when the last request is done, before the grace deadline")
	assert.Less(t, exited.Sub(last), slack, "exit soon after the last request ended")
	assert.Equal(t, int64(0), decode.Stats().Aborted, "nothing was cut")
	t.Logf("last request done %s after SIGTERM; exit %s after SIGTERM", last.Sub(t0), exited.Sub(t0))
}

// assertNear checks that at is no earlier than due − 100 ms (the cut is not early) and no
// later than due + slack.
func assertNear(t *testing.T, what string, at, due time.Time) {
	t.Helper()
	d := at.Sub(due)
	assert.GreaterOrEqual(t, d, -100*time.Millisecond, "%s %s before its due time", what, -d)
	assert.LessOrEqual(t, d, slack, "%s %s after its due time", what, d)
}

// latest is the last end time of calls.
func latest(calls []*call) time.Time {
	var t time.Time
	for _, k := range calls {
		if k.End.After(t) {
			t = k.End
		}
	}
	return t
}
