package shared_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/domain/wire"
	"github.com/smg-go/smg/test/fleet"
	"github.com/smg-go/smg/test/sim"
)

// window is the decode simulator's running window (SGLang max_running_requests, which the
// registry copies into the worker's label): the admission window of the tests.
const window = 8

// decodeSim starts a SGLang decode reporting max_running_requests = win, each output token
// taking itl, so that requests overlap.
func decodeSim(t *testing.T, win int, itl time.Duration) *sim.Server {
	t.Helper()
	return fleet.StartSim(t, sim.Config{Engine: sim.EngineSGLang, Role: sim.RoleDecode, MaxRunningRequests: win, ITL: itl})
}

func prefillSim(t *testing.T) *sim.Server {
	t.Helper()
	return fleet.StartSim(t, sim.Config{Engine: sim.EngineSGLang, Role: sim.RolePrefill})
}

// requireShed asserts the seed's shed: 503 worker_overload_protection_shed with a
// Retry-After header (whole seconds, at least 1) and the error body naming the decode.
func requireShed(t *testing.T, r *fleet.Response, decodeURL string) {
	t.Helper()
	require.Equal(t, http.StatusServiceUnavailable, r.Status, "%s", r.Body)
	assert.Equal(t, wire.CodeOverloadShed, r.Header.Get(wire.HeaderErrorCode))
	ra, err := strconv.Atoi(r.Header.Get(wire.HeaderRetryAfter))
	assert.NoError(t, err, "Retry-After %q", r.Header.Get(wire.HeaderRetryAfter))
	assert.GreaterOrEqual(t, ra, 1)
	var e struct {
		Error struct {
			Type, Code, Message string
			Param               *string
		}
	}
	require.NoError(t, json.Unmarshal(r.Body, &e), "%s", r.Body)
	assert.Equal(t, "server_error", e.Error.Type)
	assert.Equal(t, wire.CodeOverloadShed, e.Error.Code)
	assert.Contains(t, e.Error.Message, "Decode worker '"+decodeURL+"' is at capacity")
	assert.Nil(t, e.Error.Param)
}

// generatedText reads the text of a SGLang /generate answer.
func generatedText(t *testing.T, r *fleet.Response) string {
	t.Helper()
	var v struct {
		Text string `json:"text"`
	}
	require.NoError(t, json.Unmarshal(r.Body, &v), "%s", r.Body)
	return v.Text
}

// Issue #8, Done when: three smg processes share one Redis in front of a decode whose window
// is 8; 300 concurrent requests spread over the three never run more than 8 at once on the
// decode (sim max_running_seen), every request either succeeds (with the real handoff text)
// or is shed with the seed's 503 + Retry-After before any leg is dispatched, and the
// gateways' smg_pd_admission_sheds_total add up to the sheds. Afterwards no slot is held.
//
// The shared window holds while Redis answers. A burst that starves this 2-core machine can
// time out three Redis calls in a row (100 ms each) in one instance, which then counts its
// own window, by design (adapters/store; outage_test.go tests that mode). Such a run says
// nothing about the shared window, so it is run once more on fresh processes and a fresh
// database, and that run is judged whatever happens.
func TestThreeInstancesShareOneDecodeWindow(t *testing.T) {
	t.Parallel()
	t.Cleanup(client.CloseIdleConnections)
	if fb := shareOneWindow(t, 7, false); fb > 0 {
		t.Logf("Redis was marked down in an instance during the burst (%v calls served from memory): running again", fb)
		shareOneWindow(t, 6, true)
	}
}

// shareOneWindow runs the burst of TestThreeInstancesShareOneDecodeWindow on Redis database
// db and checks it, unless an instance served shared-state calls from memory and judge is
// false; it returns how many calls were served from memory.
func shareOneWindow(t *testing.T, db int, judge bool) (fallbacks float64) {
	rurl := redisDB(t, db)
	p := prefillSim(t)
	d := decodeSim(t, window, 20*time.Millisecond)
	flags := []string{"--redis-url", rurl, "--pd-admission-wait-secs", "1", "--policy", "round_robin"}
	gws := []*smg{startSMG(t, "A", p, []*sim.Server{d}, flags...), startSMG(t, "B", p, []*sim.Server{d}, flags...),
		startSMG(t, "C", p, []*sim.Server{d}, flags...)}
	for _, g := range gws {
		ws, err := g.workers()
		require.NoError(t, err)
		for _, w := range ws {
			if w.WorkerType == "decode" {
				require.Equal(t, strconv.Itoa(window), w.Labels["max_running_requests"], "the window comes from /get_server_info")
			}
		}
	}

	const n, tokens = 300, 16
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	prompt := func(i int) string { return fmt.Sprintf("shared window request %d", i) }
	rs := fire(ctx, gws, n, func(i int) map[string]any { return generate(prompt(i), tokens) })

	ok, shed := 0, map[string]int{}
	for i, r := range rs {
		require.NoError(t, r.err, "request %d via %s", i, r.gw)
		if r.resp.Status == http.StatusOK {
			ok++
			assert.Equal(t, sim.HandoffText(prompt(i), tokens), generatedText(t, r.resp), "request %d", i)
			continue
		}
		requireShed(t, r.resp, d.URL())
		shed[r.gw]++
	}
	total := 0
	for _, c := range shed {
		total += c
	}
	t.Logf("%d admitted, %d shed %v", ok, total, shed)
	for _, g := range gws { // diagnostics: a Redis marked down admits per instance
		if fb := g.metrics(t).Sum("smg_shared_state_fallbacks_total"); fb > 0 {
			t.Logf("%s served %v shared-state calls from memory", g.name, fb)
			fallbacks += fb
		}
	}
	if fallbacks > 0 && !judge {
		return fallbacks
	}
	assert.Equal(t, n, ok+total)
	assert.GreaterOrEqual(t, ok, window, "at least one full window was admitted")
	assert.Positive(t, total, "300 requests at a window of 8 with a 1 s wait must shed")

	st, ps := d.Stats(), p.Stats()
	assert.LessOrEqual(t, st.MaxRunningSeen, int64(window), "the decode never ran more than its window")
	assert.Equal(t, int64(window), st.MaxRunningSeen, "the window was used in full")
	assert.Equal(t, int64(ok), st.Requests, "only admitted requests reached the decode")
	assert.Equal(t, int64(ok), ps.Requests, "a shed request sends no prefill leg either")
	assert.Equal(t, int64(ok), st.HandoffsReceived)

	var sheds, waits float64
	for _, g := range gws {
		m := g.metrics(t)
		got := m.Sum("smg_pd_admission_sheds_total")
		assert.Equal(t, float64(shed[g.name]), got, "%s counts its own sheds", g.name)
		sheds += got
		waits += m.Sum("smg_pd_admission_waits_total")
	}
	assert.Equal(t, float64(total), sheds, "the counters match the sheds")
	assert.Positive(t, waits, "requests admitted after a wait are counted")
	assert.LessOrEqual(t, waits, float64(ok-window)+0.5, "only requests beyond the first window can have waited")

	s := slotsOf(t, rurl)
	eventually(t, 5*time.Second, func() bool { return inUse(s, d.URL()) == 0 }, "every slot released, %d held", inUse(s, d.URL()))
	return fallbacks
}
