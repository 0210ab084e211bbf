package shared_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/adapters/store/redis/redistest"
	"github.com/smg-go/smg/test/fleet"
	"github.com/smg-go/smg/test/sim"
)

// convergence is the contract of the shared registry: every replica sees a registration or
// a removal made through another within it.
const convergence = time.Second

// Issue "Replicas that share one fleet", Done when: three gateway processes sharing one
// Redis (own key prefix): a worker posted to one appears on the other two within 1 s and
// serves requests through them; a DELETE through another removes it everywhere (draining
// first, within 1 s); a fourth replica started later has the whole fleet before it reports
// ready — already when it starts listening.
func TestSharedRegistryAcrossReplicas(t *testing.T) {
	// Not parallel: its gateway processes would add CPU load to the timing-sensitive window
	// tests (a Redis call over 100 ms falls back to per-instance counting).
	t.Cleanup(client.CloseIdleConnections)
	p := prefillSim(t)
	d := decodeSim(t, 0, 0)
	flags := []string{"--redis-url", redistest.URL(t), "--redis-key-prefix", redistest.Prefix(),
		"--policy", "round_robin", "--drain-settle-secs", "1"}
	a := startSMG(t, "A", p, []*sim.Server{d}, flags...)
	b := startSMG(t, "B", p, []*sim.Server{d}, flags...)
	c := startSMG(t, "C", p, []*sim.Server{d}, flags...)
	gws := []*smg{a, b, c}
	for _, g := range gws {
		ws, err := g.workers()
		require.NoError(t, err)
		require.Len(t, ws, 2, "%s: the start-up workers are registered once in the fleet", g.name)
	}
	ids := func(g *smg) []string {
		ws, _ := g.workers()
		out := make([]string, 0, len(ws))
		for _, w := range ws {
			out = append(out, w.ID)
		}
		return out
	}
	assert.ElementsMatch(t, ids(a), ids(b), "one fleet, one set of ids")
	assert.ElementsMatch(t, ids(a), ids(c))

	// A worker posted to A appears on B and C within 1 s, and serves requests through them.
	d2 := decodeSim(t, 0, 0)
	posted := time.Now()
	id := addWorker(t, a, map[string]any{"url": d2.URL(), "worker_type": "decode"})
	for _, g := range []*smg{b, c} {
		eventually(t, convergence-time.Since(posted), func() bool { return slices.Contains(ids(g), id) },
			"%s lists the worker posted to A", g.name)
	}
	t.Logf("registration through A listed on B and C %s after the POST answered", time.Since(posted).Round(time.Millisecond))
	for _, g := range []*smg{b, c} {
		eventually(t, startTimeout, func() bool { w, ok := workerOf(g, id); return ok && w.IsHealthy }, "%s: the new worker healthy", g.name)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rs := fire(ctx, []*smg{b, c}, 8, func(i int) map[string]any { return generate(fmt.Sprintf("through B/C %d", i), 4) })
	for i, r := range rs {
		require.NoError(t, r.err)
		require.Equal(t, http.StatusOK, r.resp.Status, "request %d via %s: %s", i, r.gw, r.resp.Body)
	}
	assert.Positive(t, d2.Stats().Requests, "B and C route to the worker registered through A")

	// A DELETE through C takes it out of rotation everywhere within 1 s (draining), then
	// removes it everywhere after the drain settle time.
	deleted := time.Now()
	r := req(t, c, http.MethodDelete, "/workers/"+id, nil)
	require.Equal(t, http.StatusAccepted, r.Status, "%s", r.Body)
	for _, g := range gws {
		eventually(t, convergence-time.Since(deleted), func() bool { w, ok := workerOf(g, id); return !ok || !w.IsHealthy },
			"%s: the deleted worker out of rotation", g.name)
	}
	t.Logf("DELETE through C out of rotation on A, B, C %s after it answered", time.Since(deleted).Round(time.Millisecond))
	for _, g := range gws {
		eventually(t, 5*time.Second, func() bool { return !slices.Contains(ids(g), id) }, "%s: the deleted worker removed", g.name)
	}
	before := d2.Stats().Requests
	rs = fire(ctx, gws, 6, func(i int) map[string]any { return generate(fmt.Sprintf("after delete %d", i), 4) })
	for i, r := range rs {
		require.NoError(t, r.err)
		require.Equal(t, http.StatusOK, r.resp.Status, "request %d via %s: %s", i, r.gw, r.resp.Body)
	}
	assert.Equal(t, before, d2.Stats().Requests, "no replica routes to the deleted worker")

	// A fourth replica, started later with only the original flags, has the whole fleet
	// (including a worker posted to B meanwhile) as soon as it listens, before it is ready.
	d3 := decodeSim(t, 0, 0)
	id3 := addWorker(t, b, map[string]any{"url": d3.URL(), "worker_type": "decode"})
	want := ids(b)
	require.Len(t, want, 3)
	dd := launch(t, "D", "launch", "--pd-disaggregation", "--host", "127.0.0.1", "--port", "0",
		"--prometheus-port", "0", "--log-level", "info", "--shutdown-grace-period-secs", "1", "--shutdown-drain-delay-secs", "0",
		"--prefill", p.URL(), strconv.Itoa(p.BootstrapPort()), "--decode", d.URL(),
		"--redis-url", flags[1], "--redis-key-prefix", flags[3], "--policy", "round_robin")
	assert.ElementsMatch(t, want, ids(dd), "D lists the whole fleet when it starts listening")
	assert.Contains(t, ids(dd), id3)
	dd.waitReady(t, 3)
}

// addWorker posts body to g's /workers and returns the new worker's id.
func addWorker(t *testing.T, g *smg, body map[string]any) string {
	t.Helper()
	r := req(t, g, http.MethodPost, "/workers", body)
	require.Equal(t, http.StatusAccepted, r.Status, "%s", r.Body)
	var acc struct {
		WorkerID string `json:"worker_id"`
	}
	require.NoError(t, json.Unmarshal(r.Body, &acc))
	require.NotEmpty(t, acc.WorkerID)
	return acc.WorkerID
}

// workerOf returns the worker with id as g lists it.
func workerOf(g *smg, id string) (workerInfo, bool) {
	ws, err := g.workers()
	if err != nil {
		return workerInfo{}, false
	}
	for _, w := range ws {
		if w.ID == id {
			return w, true
		}
	}
	return workerInfo{}, false
}

// req sends method path with an optional JSON body to g.
func req(t *testing.T, g *smg, method, path string, body any) *fleet.Response {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		require.NoError(t, err)
		rd = bytes.NewReader(b)
	}
	hr, err := http.NewRequest(method, g.URL+path, rd)
	require.NoError(t, err)
	if body != nil {
		hr.Header.Set("Content-Type", "application/json")
	}
	r, err := do(hr)
	require.NoError(t, err)
	return r
}
