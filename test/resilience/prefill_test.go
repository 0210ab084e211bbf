package resilience_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/app/config"
	"github.com/smg-go/smg/test/fleet"
	"github.com/smg-go/smg/test/sim"
)

// sglang starts a SGLang fleet of np prefills and nd decodes with gateway config edits.
func sglang(t *testing.T, np, nd int, gw func(*config.Config)) *fleet.Fleet {
	t.Helper()
	return fleet.Start(t, fleet.Spec{Engine: sim.EngineSGLang, Prefills: np, Decodes: nd, Gateway: gw})
}

// A prefill that refuses connections: every attempt (5, re-selecting the pair) fails with
// a transport error, the client gets 502 prefill_request_failed, each decode leg is
// cancelled at once, and only the prefill's breaker is charged. The prefill's bootstrap port
// belongs to an unregistered simulator, so a decode leg would wait there for its room
// until cancelled.
func TestPrefillRefuses(t *testing.T) {
	t.Parallel()
	decoy := fleet.StartSim(t, sim.Config{Engine: sim.EngineSGLang, Role: sim.RolePrefill})
	dec := fleet.StartSim(t, sim.Config{Engine: sim.EngineSGLang, Role: sim.RoleDecode})
	g := fleet.StartGateway(t, fleet.DefaultConfig())
	g.Register(t, fleet.WorkerSpec(dec))
	spec := refusingWorker(t, "prefill", map[string]any{"bootstrap_port": decoy.BootstrapPort()})
	g.Register(t, spec)
	g.WaitWorkers(t, 2)

	r := g.Post(t, "/generate", generate("refused prefill", 4, false), nil)
	assert.Less(t, r.Elapsed, bound, "hang guard")
	msg := requireError(t, r, http.StatusBadGateway, "prefill_request_failed")
	assert.Contains(t, msg, "connection refused")

	waitIdle(t, dec)
	cancelledOnly(t, dec, "decode")
	assert.Zero(t, decoy.Stats().Requests)
	_, ok, fail := cb(t, g, spec["url"].(string))
	assert.Equal(t, []float64{0, 5}, []float64{ok, fail}, "one transport failure per attempt")
	state, ok, fail := cb(t, g, dec.URL())
	assert.Equal(t, []float64{0, 0, 0}, []float64{state, ok, fail}, "cancelled decode legs record nothing")
}

// A prefill answering 5xx: retried once on the same (only) prefill, which fails the same
// way — the request's failure, counted once — then the client gets the prefill's status
// with prefill_upstream_error; each decode leg (it has arrived: the prefill answers after a
// short delay) is cancelled while waiting for its room. The prefill keeps serving.
func TestPrefill5xx(t *testing.T) {
	t.Parallel()
	f := sglang(t, 1, 1, nil)
	for _, stream := range []bool{false, true} {
		f.Reset()
		r := f.Gateway.Post(t, "/generate", generate("prefill 503", 4, stream, "prefill:slow-first-byte:100", "prefill:status:503"), nil)
		assert.Less(t, r.Elapsed, bound, "hang guard")
		msg := requireError(t, r, http.StatusServiceUnavailable, "prefill_upstream_error")
		assert.Contains(t, msg, "Prefill server error (503): sim fault: injected status 503")

		waitIdle(t, f.Sims()...)
		p, d := f.Prefills[0].Stats(), f.Decodes[0].Stats()
		assert.Equal(t, int64(2), p.Requests, "the repeat on the same worker ends the retries")
		assert.Equal(t, int64(2), p.Errors)
		assert.Equal(t, int64(2), d.Requests, "each attempt sent a decode leg")
		cancelledOnly(t, f.Decodes[0], "decode")
	}
	_, _, fail := cb(t, f.Gateway, f.Prefills[0].URL())
	assert.Equal(t, float64(2), fail, "once per request")
	state, _, _ := cb(t, f.Gateway, f.Prefills[0].URL())
	assert.Equal(t, float64(0), state, "closed (--cb-failure-threshold 10)")
	r := f.Gateway.Post(t, "/generate", generate("after the failures", 4, false), nil)
	require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
}

// A prefill answering 4xx: a client fault, passed through at once (no retry), the decode
// leg cancelled, and the prefill's breaker records a success.
func TestPrefill4xx(t *testing.T) {
	t.Parallel()
	f := sglang(t, 1, 1, nil)
	for _, stream := range []bool{false, true} {
		f.Reset()
		r := f.Gateway.Post(t, "/generate", generate("prefill 400", 4, stream, "prefill:slow-first-byte:100", "prefill:status:400"), nil)
		assert.Less(t, r.Elapsed, bound, "hang guard")
		msg := requireError(t, r, http.StatusBadRequest, "prefill_upstream_error")
		assert.Contains(t, msg, "Prefill server error (400): sim fault: injected status 400")

		waitIdle(t, f.Sims()...)
		assert.Equal(t, int64(1), f.Prefills[0].Stats().Requests, "a 4xx is never retried")
		assert.Equal(t, int64(1), f.Decodes[0].Stats().Requests)
		cancelledOnly(t, f.Decodes[0], "decode")
	}
	state, ok, fail := cb(t, f.Gateway, f.Prefills[0].URL())
	assert.Equal(t, []float64{0, 2, 0}, []float64{state, ok, fail}, "4xx counts as a success")
}

// A prefill that hangs is bounded by the gateway, never by the engine, and blamed: its own
// deadline (--prefill-timeout-secs, 300 ms here) or the decode's first-byte deadline
// passing while the prefill has not answered (the decode leg answers its head at once, as
// a real streaming engine does) fails the attempt with 504 prefill_timeout, counted as
// unresponsive on the prefill's breaker and never on the decode's, and not retried onto the
// same unresponsive prefill (there is no other: one deadline is the whole cost); without
// either the request timeout answers 504 request_timeout and charges nobody. Both legs are
// cancelled every time, and the answer comes near the deadline.
func TestPrefillHangs(t *testing.T) {
	t.Parallel()
	const deadline = 300 * time.Millisecond
	cases := []struct {
		name   string
		gw     func(*config.Config)
		status int
		code   string
		msg    string
		tries  int64
		limit  time.Duration
	}{
		{"prefill deadline", func(c *config.Config) {
			c.PrefillTimeout = deadline
			c.RetryMaxRetries = 2
		}, http.StatusGatewayTimeout, "prefill_timeout", "sent no response head within --prefill-timeout-secs (0.3s)", 1, deadline},
		{"decode first-byte deadline while the prefill has not answered", func(c *config.Config) {
			c.FirstByteTimeout = deadline
			c.RetryMaxRetries = 2
		}, http.StatusGatewayTimeout, "prefill_timeout", "had not answered while the decode waited 0.3s", 1, deadline},
		{"request timeout", func(c *config.Config) {
			c.RequestTimeout = time.Second
		}, http.StatusGatewayTimeout, "request_timeout", "request timed out", 1, time.Second},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			f := sglang(t, 1, 1, c.gw)
			r := f.Gateway.Post(t, "/generate", generate("prefill hangs", 4, true, "prefill:hang", "decode:delay-body:1"), nil)
			assert.GreaterOrEqual(t, r.Elapsed, c.limit, "the attempt waited out its deadline")
			assert.Less(t, r.Elapsed, c.limit+time.Second, "and ended there")
			assert.Contains(t, requireError(t, r, c.status, c.code), c.msg)

			waitIdle(t, f.Sims()...)
			p := f.Prefills[0].Stats()
			assert.Equal(t, c.tries, p.Requests)
			assert.Equal(t, c.tries, p.Aborted, "the hanging prefill leg was cancelled")
			d := f.Decodes[0].Stats()
			assert.Equal(t, d.Requests, d.Aborted, "every decode leg was cancelled: %+v", d)
			assert.Zero(t, d.UnmatchedRooms+p.UnmatchedRooms, "nobody waited out a handoff")
			_, ok, fail := cb(t, f.Gateway, f.Decodes[0].URL())
			assert.Equal(t, []float64{0, 0}, []float64{ok, fail}, "the decode is never blamed")
			blamed := float64(c.tries)
			if c.code == "request_timeout" {
				blamed = 0
			}
			_, ok, fail = cb(t, f.Gateway, f.Prefills[0].URL())
			assert.Equal(t, []float64{0, blamed}, []float64{ok, fail}, "the prefill is")
		})
	}
}
