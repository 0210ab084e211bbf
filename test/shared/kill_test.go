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

	"github.com/smg-go/smg/test/sim"
)

// Issue #8, Done when: killing one instance mid-load (SIGKILL) returns its slots within the
// lease time, and the others keep serving.
//
// Instance A holds 4 of the decode's 8 slots for long requests when it is killed. The engine
// stops running them at once (A's connections are gone: the sim counts aborts), but A's
// leases stay in Redis until they expire — nothing renews them any more. Meanwhile B and C
// serve on the 4 free slots. Within the lease TTL (plus a little) the window is empty again,
// and a full window of 8 long requests through B and C is admitted at once: no wait, no shed,
// 8 running together on the decode.
func TestKilledInstanceSlotsReturnWithinTheLease(t *testing.T) {
	t.Parallel()
	t.Cleanup(client.CloseIdleConnections)
	rurl := redisDB(t, 8)
	p := prefillSim(t)
	d := decodeSim(t, window, 20*time.Millisecond)
	flags := []string{"--redis-url", rurl, "--pd-admission-wait-secs", "1", "--policy", "round_robin"}
	a := startSMG(t, "A", p, []*sim.Server{d}, flags...)
	b := startSMG(t, "B", p, []*sim.Server{d}, flags...)
	c := startSMG(t, "C", p, []*sim.Server{d}, flags...)
	slots := slotsOf(t, rurl)

	// A takes 4 slots with requests of 300 tokens (6 s of decoding each).
	const held = 4
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	for i := range held {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _ = a.post(ctx, "/generate", generate(fmt.Sprintf("A holds slot %d", i), 300), nil) // fails when A dies
		}()
	}
	eventually(t, 5*time.Second, func() bool { return d.Stats().Running == held && inUse(slots, d.URL()) == held },
		"A's %d requests running (running %d, in use %d)", held, d.Stats().Running, inUse(slots, d.URL()))

	a.kill(t)
	killed := time.Now()
	wg.Wait()
	eventually(t, 5*time.Second, func() bool { return d.Stats().Running == 0 }, "the decode dropped A's requests")
	assert.Equal(t, int64(held), d.Stats().Aborted, "the engine saw A's clients go away")
	assert.Equal(t, held, inUse(slots, d.URL()), "A's leases outlive it in Redis until they expire")

	// The others keep serving on the free slots.
	rs := fire(ctx, []*smg{b, c}, window-held, func(i int) map[string]any { return generate(fmt.Sprintf("B/C serve %d", i), 8) })
	for i, r := range rs {
		require.NoError(t, r.err)
		assert.Equal(t, http.StatusOK, r.resp.Status, "request %d via %s: %s", i, r.gw, r.resp.Body)
	}

	// A's slots come back within the lease time (the bound is the contract; 2 s of slack for
	// the TTL's granularity and the polling).
	eventually(t, leaseTTL-time.Since(killed)+2*time.Second, func() bool { return inUse(slots, d.URL()) == 0 },
		"A's slots back within the lease TTL %s (in use: %d)", leaseTTL, inUse(slots, d.URL()))
	t.Logf("A's slots returned %s after the kill (lease TTL %s)", time.Since(killed).Round(100*time.Millisecond), leaseTTL)

	// The whole window is usable again: 8 long requests (2 s each, longer than the 1 s
	// admission wait) through B and C are admitted at once and run together.
	before := b.metrics(t).Sum("smg_pd_admission_waits_total") + c.metrics(t).Sum("smg_pd_admission_waits_total")
	d.Reset()
	rs = fire(ctx, []*smg{b, c}, window, func(i int) map[string]any { return generate(fmt.Sprintf("full window %d", i), 100) })
	for i, r := range rs {
		require.NoError(t, r.err)
		assert.Equal(t, http.StatusOK, r.resp.Status, "request %d via %s: %s", i, r.gw, r.resp.Body)
	}
	after := b.metrics(t).Sum("smg_pd_admission_waits_total") + c.metrics(t).Sum("smg_pd_admission_waits_total")
	assert.Equal(t, before, after, "no request had to wait for a slot")
	assert.Zero(t, b.metrics(t).Sum("smg_pd_admission_sheds_total")+c.metrics(t).Sum("smg_pd_admission_sheds_total"))
	assert.Equal(t, int64(window), d.Stats().MaxRunningSeen, "the full window ran at once")
}
