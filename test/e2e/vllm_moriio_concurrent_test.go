package e2e_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/app/config"
	"github.com/smg-go/smg/test/fleet"
	"github.com/smg-go/smg/test/sim"
)

// threeAttempts retries a request at most twice, quickly.
func threeAttempts(c *config.Config) {
	c.RetryMaxRetries, c.RetryInitialBackoffMS, c.RetryMaxBackoffMS = 3, 10, 20
	c.CBFailureThreshold = 100 // one pair: the same prefill serves every attempt
}

// shortHandoff keeps the sims' waits for a peer short, so a push for nobody gives up soon.
func shortHandoff(c *sim.Config) { c.HandoffTimeout = time.Second }

// cbFailures is smg_worker_cb_outcomes_total{outcome="failure"} of worker s.
func cbFailures(m fleet.Metrics, s *sim.Server) float64 {
	return m.Sum("smg_worker_cb_outcomes_total", "worker", s.URL(), "outcome", "failure")
}

// concurrentWrite is a MoRI-IO WRITE pair with moriio_write_dispatch: concurrent.
func concurrentWrite(t *testing.T, gw func(*config.Config)) *moriFleet {
	return startMoRI(t, sim.MoRIIOModeWrite, true, gw, shortHandoff)
}

// prefillHolds makes the prefill wait before computing (and pushing), so the decode leg has
// surely allocated its blocks and waits for the push when the prefill fails.
const prefillHolds = "prefill:slow-first-byte:300"

// Seed "WRITE dispatch": a client that hangs up drops both concurrent legs; the decode,
// aborted after allocating and before write_done, keeps its blocks (leaked_blocks). Once,
// as no retry follows a gone client.
func TestMoRIIOConcurrentClientHangUpDropsTheDecode(t *testing.T) {
	t.Parallel()
	for _, stream := range []bool{false, true} {
		t.Run(streamName(stream), func(t *testing.T) {
			t.Parallel()
			f := concurrentWrite(t, threeAttempts)
			body := apiChat.body("the client leaves", 4, stream)
			body["sim_fault"] = "prefill:slow-first-byte:5000"
			ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
			defer cancel()
			_, err := f.g.Do(f.g.NewRequest(t, ctx, apiChat.path, body, nil))
			require.Error(t, err, "the client gave up")
			settled(t, f.d, func(st sim.Stats) bool { return st.Aborted == 1 })
			settled(t, f.p, func(st sim.Stats) bool { return st.Aborted == 1 })
			d, p := f.d.Stats(), f.p.Stats()
			assert.Equal(t, int64(1), d.Requests, "decode leg sent once")
			assert.Equal(t, int64(1), p.Requests, "prefill leg sent once")
			assert.Equal(t, int64(1), d.LeakedBlocks, "the dropped decode keeps its block")
			assert.Zero(t, d.HandoffsReceived)
			assert.Equal(t, 1.0, f.g.Metrics(t).Sum("smg_pd_kv_connector_mode_total", "mode", "moriio"))
		})
	}
}

// Seed "WRITE dispatch": a failing prefill ends the attempt with its error passed through
// as prefill_upstream_error and drops the decode leg — once per attempt.
func TestMoRIIOConcurrentPrefillFailureDropsTheDecode(t *testing.T) {
	t.Parallel()
	for _, stream := range []bool{false, true} {
		t.Run(streamName(stream), func(t *testing.T) {
			t.Parallel()
			f := concurrentWrite(t, threeAttempts)
			body := apiCompletions.body("the prefill fails", 4, stream)
			body["sim_fault"] = []string{prefillHolds, "prefill:status:500"}
			r := f.g.Post(t, apiCompletions.path, body, nil)
			assert.Less(t, r.Elapsed, moriHangGuard, "hang guard")
			assertRefused(t, r, http.StatusInternalServerError, "prefill_upstream_error")
			settled(t, f.d, func(st sim.Stats) bool { return st.Aborted == 2 })
			d, p := f.d.Stats(), f.p.Stats()
			assert.Equal(t, int64(2), p.Requests, "two attempts: the same 500 again on the only prefill ends it")
			assert.Equal(t, int64(2), d.Requests)
			assert.Equal(t, int64(2), d.Aborted, "the decode dropped once per attempt")
			assert.Equal(t, int64(2), d.LeakedBlocks, "each dropped decode keeps its block")
			assert.Zero(t, d.HandoffsReceived)
			m := f.g.Metrics(t)
			assert.Zero(t, m.Sum("smg_pd_kv_transfer_failures_total"), "a prefill error is not a handoff failure")
			assert.Equal(t, 1.0, cbFailures(m, f.p), "the prefill's breaker took the failure once for the request")
			assert.Zero(t, cbFailures(m, f.d), "the dropped decode records nothing")
		})
	}
}

// Seed "WRITE dispatch": a handoff that fails its check (here a foreign transfer_id: the
// prefill pushes somewhere else) answers 502 moriio_handoff_invalid and drops the decode leg
// already in flight — once per attempt — and every failure is counted.
func TestMoRIIOConcurrentInvalidHandoffDropsTheDecode(t *testing.T) {
	t.Parallel()
	for _, stream := range []bool{false, true} {
		t.Run(streamName(stream), func(t *testing.T) {
			t.Parallel()
			f := concurrentWrite(t, threeAttempts)
			body := apiChat.body("a foreign handoff", 4, stream)
			body["sim_fault"] = []string{prefillHolds, "prefill:" + sim.FaultHandoffWrongTransferID}
			r := f.g.Post(t, apiChat.path, body, nil)
			assert.Less(t, r.Elapsed, moriHangGuard, "hang guard")
			assertRefused(t, r, http.StatusBadGateway, "moriio_handoff_invalid")
			settled(t, f.d, func(st sim.Stats) bool { return st.Aborted == 2 })
			d := f.d.Stats()
			assert.Equal(t, int64(2), f.p.Stats().Requests, "two attempts: the same failure again on the only prefill ends it")
			assert.Equal(t, int64(2), d.Aborted, "the decode dropped once per attempt")
			assert.Equal(t, int64(2), d.LeakedBlocks)
			assert.Zero(t, d.HandoffsReceived)
			m := f.g.Metrics(t)
			assert.Equal(t, 2.0, m.Sum("smg_pd_kv_transfer_failures_total"), "each invalid handoff counted")
			assert.Equal(t, 1.0, cbFailures(m, f.p), "blamed on the prefill that returned it, once for the request")
			assert.Zero(t, cbFailures(m, f.d), "the dropped decode records nothing")
		})
	}
}

// Seed "MoRI-IO (HTTP)": under concurrent dispatch the decode response is forwarded only
// after the handoff passed. Here the KV arrives and the decode answers in full, but the
// prefill's late handoff reports other ports than the decode was told: 502
// moriio_handoff_invalid, and none of the decode's text reaches the client.
func TestMoRIIOConcurrentArrivedDecodeIsNotForwardedAfterAnInvalidHandoff(t *testing.T) {
	t.Parallel()
	for _, stream := range []bool{false, true} {
		t.Run(streamName(stream), func(t *testing.T) {
			t.Parallel()
			f := concurrentWrite(t, func(c *config.Config) { c.DisableRetries = true })
			const prompt = "the decode answers first"
			body := apiCompletions.body(prompt, 4, stream)
			body["sim_fault"] = []string{"prefill:delay-body:400", "prefill:" + sim.FaultHandoffWrongPorts}
			r := f.g.Post(t, apiCompletions.path, body, nil)
			assertRefused(t, r, http.StatusBadGateway, "moriio_handoff_invalid")
			assert.NotContains(t, string(r.Body), sim.HandoffText(prompt, 4))
			assert.NotContains(t, string(r.Body), "text_completion")
			settled(t, f.d, func(st sim.Stats) bool { return st.HandoffsReceived == 1 })
			d := f.d.Stats()
			assert.Equal(t, int64(1), d.Requests)
			if !stream {
				assert.Zero(t, d.Aborted, "the decode had answered in full before the handoff was checked")
			}
			assert.Zero(t, d.LeakedBlocks, "write_done had arrived")
			assert.Equal(t, 1.0, f.g.Metrics(t).Sum("smg_pd_kv_transfer_failures_total"))
		})
	}
}

// Seed "MoRI-IO (HTTP)": a decode engine that refuses the request takes no push, so its
// error is returned without waiting for the prefill, which is dropped; a decode transport
// error answers 502 decode_request_failed. Neither is retried onto the slow prefill.
func TestMoRIIOConcurrentDecodeFailuresDoNotWaitForThePrefill(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, fault string
		status      int
		code        string
		dFailures   float64
	}{
		{"refusal", "decode:status:400", http.StatusBadRequest, "decode_bad_request", 0}, // a 4xx never moves a breaker
		{"transport error", "decode:reset", http.StatusBadGateway, "decode_request_failed", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := concurrentWrite(t, func(c *config.Config) { c.DisableRetries = true })
			body := apiChat.body("the decode fails", 4, false)
			// The decode fails 200 ms in, so the prefill leg has surely reached its engine.
			body["sim_fault"] = []string{"prefill:slow-first-byte:5000", "decode:slow-first-byte:200", tc.fault}
			r := f.g.Post(t, apiChat.path, body, nil)
			assert.Less(t, r.Elapsed, 3*time.Second, "answered before the prefill's 5 s")
			assertRefused(t, r, tc.status, tc.code)
			settled(t, f.p, func(st sim.Stats) bool { return st.Aborted == 1 })
			assert.Equal(t, int64(1), f.p.Stats().Requests)
			assert.Zero(t, f.p.Stats().HandoffsSent, "the dropped prefill pushed nothing")
			assert.Zero(t, f.d.Stats().LeakedBlocks, "the refusing decode allocated nothing")
			m := f.g.Metrics(t)
			assert.Equal(t, tc.dFailures, cbFailures(m, f.d))
			assert.Zero(t, cbFailures(m, f.p), "the dropped prefill records nothing")
		})
	}
}
