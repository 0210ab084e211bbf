package shared_test

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/test/fleet"
	"github.com/smg-go/smg/test/sim"
)

// outageWindow is the decode window of the outage test, small so that one instance fills it.
const outageWindow = 4

// longTokens makes a request decode for 2.4 s (ITL 20 ms): longer than the 1 s admission
// wait plus the time to start the next request, so a full window stays full while a probe
// request waits and is shed.
const longTokens = 120

// Issue #8, Done when: with Redis stopped mid-run the gateway keeps answering per the
// documented behaviour (adapters/store/fallback.go): calls fail fast (100 ms bound) and are
// served by the in-memory adapters, so admission falls back to per-instance counting — each
// instance admits up to the full window, as SMG does — counted in
// smg_shared_state_fallbacks_total; when Redis returns, the instances go back to the shared
// window by themselves (one probe per second).
//
// Two instances, a decode window of 4, a private redis-server:
//  1. Redis up: A fills the window; a request through B is shed (B sees A's slots). Redis
//     is killed while A's requests run: they still complete (their leases cannot be
//     released in Redis, which is gone with them; nothing hangs).
//  2. Redis down: A and B each admit a full window (8 running on the decode, no shed, no
//     request slower than a hang guard); a 5th request through A is shed by A's own count.
//  3. Redis restarted on the same port: A's requests claim slots in Redis again, and B sheds
//     again while A holds the window.
func TestRedisOutageFallsBackToPerInstanceWindows(t *testing.T) {
	t.Parallel()
	t.Cleanup(client.CloseIdleConnections)
	rs := startRedis(t, 0)
	p := prefillSim(t)
	d := decodeSim(t, outageWindow, 20*time.Millisecond)
	flags := []string{"--redis-url", rs.URL(), "--pd-admission-wait-secs", "1", "--policy", "round_robin"}
	a := startSMG(t, "A", p, []*sim.Server{d}, flags...)
	b := startSMG(t, "B", p, []*sim.Server{d}, flags...)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Second)
	defer cancel()

	// fill sends n long requests through g in the background; wait() returns their answers.
	fill := func(g *smg, n int, tag string) (wait func() []result) {
		out := make([]result, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r, err := g.post(ctx, "/generate", generate(fmt.Sprintf("%s %d", tag, i), longTokens), nil)
				out[i] = result{gw: g.name, resp: r, err: err}
			}()
		}
		return func() []result { wg.Wait(); return out }
	}
	requireOK := func(rs []result) {
		t.Helper()
		for i, r := range rs {
			require.NoError(t, r.err, "request %d via %s", i, r.gw)
			assert.Equal(t, http.StatusOK, r.resp.Status, "request %d via %s: %s", i, r.gw, r.resp.Body)
			assert.Less(t, r.resp.Elapsed, 15*time.Second, "hang guard")
		}
	}
	probe := func(g *smg) *fleet.Response {
		t.Helper()
		r, err := g.post(ctx, "/generate", generate("one too many via "+g.name, 2), nil)
		require.NoError(t, err)
		return r
	}
	running := func(n int64) {
		t.Helper()
		eventually(t, 5*time.Second, func() bool { return d.Stats().Running == n }, "%d running on the decode (got %d)", n, d.Stats().Running)
	}

	// 1. Redis up: the window is shared.
	slots := slotsOf(t, rs.URL())
	wait := fill(a, outageWindow, "redis up")
	running(outageWindow)
	assert.Equal(t, outageWindow, inUse(slots, d.URL()), "A's slots are in Redis")
	requireShed(t, probe(b), d.URL())
	rs.kill()
	requireOK(wait())
	running(0)

	// 2. Redis down: per-instance windows.
	d.Reset()
	waitA, waitB := fill(a, outageWindow, "redis down A"), fill(b, outageWindow, "redis down B")
	running(2 * outageWindow)
	requireShed(t, probe(a), d.URL())
	requireOK(waitA())
	requireOK(waitB())
	assert.Equal(t, int64(2*outageWindow), d.Stats().MaxRunningSeen, "each instance admitted a full window of its own")
	for _, g := range []*smg{a, b} {
		assert.Positive(t, g.metrics(t).Sum("smg_shared_state_fallbacks_total", "store", "slots"),
			"%s counted the calls served by memory", g.name)
		assert.Contains(t, g.out.String(), "shared state: Redis unavailable, falling back to per-instance state",
			"%s logged the outage", g.name)
	}
	assert.Equal(t, 1.0, a.metrics(t).Sum("smg_pd_admission_sheds_total"), "A shed its own 5th request")
	assert.Equal(t, 1.0, b.metrics(t).Sum("smg_pd_admission_sheds_total"), "B shed in phase 1")

	// 3. Redis back on the same address: each instance probes it again (once per second) and
	// recovers; a request whose admission no longer counts a fallback was served by Redis.
	rs2 := startRedis(t, rs.port)
	slots2 := slotsOf(t, rs2.URL())
	for _, g := range []*smg{a, b} {
		eventually(t, 10*time.Second, func() bool {
			before := g.metrics(t).Sum("smg_shared_state_fallbacks_total", "store", "slots")
			r := probe(g)
			require.Equal(t, http.StatusOK, r.Status, "%s: %s", g.name, r.Body)
			return g.metrics(t).Sum("smg_shared_state_fallbacks_total", "store", "slots") == before
		}, "%s uses Redis again", g.name)
		assert.Contains(t, g.out.String(), "shared state: Redis recovered, using shared state again")
	}
	wait = fill(a, outageWindow, "redis back")
	running(outageWindow)
	assert.Equal(t, outageWindow, inUse(slots2, d.URL()), "A's slots are in Redis again")
	requireShed(t, probe(b), d.URL())
	requireOK(wait())
	assert.Equal(t, 2.0, b.metrics(t).Sum("smg_pd_admission_sheds_total"), "B sees A's slots again")
	eventually(t, 5*time.Second, func() bool { return inUse(slots2, d.URL()) == 0 }, "every slot released")
}
