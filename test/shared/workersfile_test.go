package shared_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/test/fleet"
	"github.com/smg-go/smg/test/sim"
)

// writeWorkers replaces path atomically (write, rename), as a ConfigMap update does.
func writeWorkers(t *testing.T, path, content string) {
	t.Helper()
	require.NoError(t, os.WriteFile(path+".tmp", []byte(content), 0o600))
	require.NoError(t, os.Rename(path+".tmp", path))
}

func nixlPair(p, d *sim.Server) string {
	return fmt.Sprintf(`
workers:
  - url: %s
    worker_type: prefill
    kv_connector: NixlConnector
    labels: {zone: a}
  - url: %s
    worker_type: decode
    kv_connector: NixlConnector
`, p.URL(), d.URL())
}

func chat(text string) map[string]any {
	return map[string]any{"model": "sim-model", "max_tokens": 3,
		"messages": []map[string]any{{"role": "user", "content": text}}}
}

// Issue "Replicas that share one fleet", Done when: a gateway started with --workers-file
// serves a vLLM NIXL pair with no admin call (a real KV handoff: handoffs_received grows,
// nothing recomputed), and picks up an edited file: the decode swapped for another one is
// drained and the new one serves. SIGHUP re-applies the file even unchanged, so a worker
// deleted through the admin API comes back.
func TestWorkersFileServesAVLLMPairAndFollowsEdits(t *testing.T) {
	// Not parallel: its gateway processes would add CPU load to the timing-sensitive window
	// tests (a Redis call over 100 ms falls back to per-instance counting).
	t.Cleanup(client.CloseIdleConnections)
	p := fleet.StartSim(t, sim.Config{Engine: sim.EngineVLLM, Role: sim.RolePrefill})
	d1 := fleet.StartSim(t, sim.Config{Engine: sim.EngineVLLM, Role: sim.RoleDecode})
	d2 := fleet.StartSim(t, sim.Config{Engine: sim.EngineVLLM, Role: sim.RoleDecode})
	path := filepath.Join(t.TempDir(), "workers.yaml")
	writeWorkers(t, path, nixlPair(p, d1))
	g := launch(t, "F", "launch", "--pd-disaggregation", "--host", "127.0.0.1", "--port", "0",
		"--prometheus-port", "0", "--log-level", "info", "--shutdown-grace-period-secs", "1", "--shutdown-drain-delay-secs", "0",
		"--drain-settle-secs", "0", "--workers-file", path)
	g.waitDetected(t, 2)
	ws, err := g.workers()
	require.NoError(t, err)
	assert.Equal(t, "a", ws[0].Labels["zone"], "labels from the file")

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	serve := func(n int, tag string) {
		t.Helper()
		for i := range n {
			r, err := g.post(ctx, "/v1/chat/completions", chat(fmt.Sprintf("%s %d", tag, i)), nil)
			require.NoError(t, err)
			require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
		}
	}
	serve(3, "from the file")
	eventually(t, 5*time.Second, func() bool { return d1.Stats().HandoffsReceived == 3 }, "three NIXL handoffs (got %d)", d1.Stats().HandoffsReceived)
	assert.Zero(t, d1.Stats().RecomputedPrompts, "kv_connector from the file: no recompute")

	// Edit: d2 replaces d1. Picked up without a signal (polled every second).
	writeWorkers(t, path, nixlPair(p, d2))
	eventually(t, 10*time.Second, func() bool {
		ws, err := g.workers()
		return err == nil && len(ws) == 2 && ws[1].URL == d2.URL() && ws[1].IsHealthy && ws[1].Labels["version"] != ""
	}, "the edited file applied")
	serve(3, "after the edit")
	eventually(t, 5*time.Second, func() bool { return d2.Stats().HandoffsReceived == 3 }, "d2 serves (got %d)", d2.Stats().HandoffsReceived)
	assert.Equal(t, int64(3), d1.Stats().Requests, "the decode removed from the file gets nothing more")

	// SIGHUP: the file is unchanged, but a worker deleted through the admin API comes back.
	ws, _ = g.workers()
	r := req(t, g, http.MethodDelete, "/workers/"+ws[1].ID, nil)
	require.Equal(t, http.StatusAccepted, r.Status, "%s", r.Body)
	eventually(t, 5*time.Second, func() bool { ws, _ := g.workers(); return len(ws) == 1 }, "deleted")
	time.Sleep(1500 * time.Millisecond) // a poll of the unchanged file does not bring it back
	ws, _ = g.workers()
	require.Len(t, ws, 1)
	require.NoError(t, g.cmd.Process.Signal(syscall.SIGHUP))
	g.waitDetected(t, 2)
	serve(1, "after SIGHUP")
}

// waitDetected waits until n workers are listed, healthy and detected.
func (s *smg) waitDetected(t *testing.T, n int) {
	t.Helper()
	eventually(t, startTimeout, func() bool {
		ws, err := s.workers()
		if err != nil || len(ws) != n {
			return false
		}
		for _, w := range ws {
			if !w.IsHealthy || w.Labels["version"] == "" {
				return false
			}
		}
		return true
	}, "%s: %d workers healthy and detected", s.name, n)
}
