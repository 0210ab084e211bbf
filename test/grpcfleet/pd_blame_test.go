package grpcfleet_test

import (
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/fx"

	"github.com/smg-go/smg/adapters/telemetry"
	"github.com/smg-go/smg/app/config"
	"github.com/smg-go/smg/domain/text"
	"github.com/smg-go/smg/test/fleet"
	"github.com/smg-go/smg/test/sim/grpcsim"
)

// blameFleet is two prefills and two decodes of engine behind one gateway (so a retry has
// somewhere to go); the first prefill gets pFaults and the first decode dFaults. handoff is
// every simulator's KV handoff timeout (its bootstrap and KV-wait timeout), limit the
// gateway's prefill, first-byte and decode deadlines. Retries are fast; the tokenizer is
// preloaded and warmed.
func blameFleet(t *testing.T, engine string, handoff, limit time.Duration, pFaults, dFaults []string) (*fleet.Gateway, []*grpcsim.Server) {
	t.Helper()
	_, dir := qwen3(t)
	mk := func(role string, faults []string) grpcsim.Config {
		return grpcsim.Config{Engine: engine, Role: role, Model: pdModel, TokenizerPath: dir, Faults: faults, HandoffTimeout: handoff}
	}
	s := sims(t, mk(grpcsim.RolePrefill, pFaults), mk(grpcsim.RolePrefill, nil), mk(grpcsim.RoleDecode, dFaults), mk(grpcsim.RoleDecode, nil))
	cfg := fleet.DefaultConfig()
	cfg.Policy = "round_robin"
	for _, p := range s[:2] {
		spec := config.PrefillSpec{URL: p.URL()}
		if engine != grpcsim.EngineVLLM {
			spec.BootstrapPort = port(p.BootstrapPort())
		}
		cfg.Prefill = append(cfg.Prefill, spec)
	}
	cfg.Decode = []string{s[2].URL(), s[3].URL()}
	cfg.PrefillTimeout, cfg.DecodeTimeout, cfg.FirstByteTimeout = limit, limit, limit
	cfg.RetryInitialBackoffMS, cfg.RetryMaxBackoffMS = 1, 5
	m, _ := qwen3(t)
	g := fleet.StartGateway(t, cfg, fx.Decorate(func(r *text.Registry) *text.Registry { r.Put(pdModel, m); return r }))
	g.WaitWorkers(t, 4)
	warm(t, g)
	return g, s
}

// hitCulprit sends requests until one reached culprit (at most four: round robin reaches
// every worker of a leg within two), each answered 200 within bound.
func hitCulprit(t *testing.T, g *fleet.Gateway, culprit *grpcsim.Server, bound time.Duration) {
	t.Helper()
	for i := 0; i < 4 && culprit.Stats().Requests == 0; i++ {
		start := time.Now()
		r := g.Post(t, "/v1/completions", map[string]any{"model": pdModel, "prompt": "who is to blame " + string(rune('a'+i)), "max_tokens": 3}, nil)
		elapsed := time.Since(start)
		require.Equal(t, http.StatusOK, r.Status, string(r.Body))
		assert.Less(t, elapsed, bound, "answered within the bound")
	}
	require.Positive(t, culprit.Stats().Requests, "round robin sent a leg to the faulty worker")
}

// hitCulpritStreaming is hitCulprit with streamed chat requests, until culprit got one more
// leg: each is a whole stream (200, [DONE], no error event) within bound.
func hitCulpritStreaming(t *testing.T, g *fleet.Gateway, culprit *grpcsim.Server, bound time.Duration) {
	t.Helper()
	before := culprit.Stats().Requests
	for i := 0; i < 4 && culprit.Stats().Requests == before; i++ {
		start := time.Now()
		r := g.Post(t, "/v1/chat/completions", map[string]any{"model": pdModel, "stream": true, "max_tokens": 3,
			"messages": []map[string]any{{"role": "user", "content": "stream the blame " + string(rune('a'+i))}}}, nil)
		require.Equal(t, http.StatusOK, r.Status, string(r.Body))
		assert.Less(t, time.Since(start), bound, "answered within the bound")
		events, done := sseData(t, r.Body)
		assert.True(t, done, "the stream ends with [DONE]: %s", r.Body)
		for _, e := range events {
			assert.NotContains(t, e, "error", "no error event: %s", r.Body)
		}
	}
	require.Greater(t, culprit.Stats().Requests, before, "round robin sent a streamed leg to the faulty worker")
}

func hostOf(s *grpcsim.Server) string { return strings.TrimPrefix(s.URL(), "grpc://") }

// assertBlame checks the breakers once the last request's blame settled: every leg sent to
// culprit was charged to it, and no other worker's breaker counted a failure.
func assertBlame(t *testing.T, g *fleet.Gateway, s []*grpcsim.Server, culprit *grpcsim.Server) {
	t.Helper()
	n := float64(culprit.Stats().Requests)
	require.Eventually(t, func() bool { return cbOutcomes(t, g, hostOf(culprit), "failure") == n }, faultBound, 10*time.Millisecond,
		"each of the culprit's %v legs is charged to it", n)
	for _, w := range s {
		if w != culprit {
			assert.Zero(t, cbOutcomes(t, g, hostOf(w), "failure"), "a healthy breaker (%s) does not move", w.URL())
		}
	}
}

// A hung gRPC leg (SGLang: the pair waits on each other) is found by whichever detector
// fires first, and only the hung worker is charged:
//   - the engine's own handoff timeout, before the gateway's deadlines: a hung decode makes
//     the prefill report its bootstrap timeout (KVPoll.Bootstrapping), a hung prefill makes
//     the decode report its KV wait (KVPoll.WaitingForInput); the silent leg is charged
//     (never the reporter), the retry avoids it and the request succeeds after one timeout;
//   - the gateway's leg deadlines, before the engine's: the timeout is ambiguous, the retry
//     keeps the decode and changes the prefill (a hung decode is charged twice and then
//     avoided; a hung prefill once).
//
// A hung vLLM leg (sequential) is its own deadline's. The hung leg is aborted (its RPC
// retired) every time; no healthy breaker moves.
func TestGRPCHungLegIsChargedToTheHungWorker(t *testing.T) {
	t.Parallel()
	const short, long = time.Second, 30 * time.Second
	for _, c := range []struct {
		name           string
		engine         string
		handoff, limit time.Duration
		hungDecode     bool
		bound          time.Duration // per request
	}{
		{"hung decode, the prefill reports its bootstrap timeout", grpcsim.EngineSGLang, short, long, true, short + faultBound},
		{"hung prefill, the decode reports its KV wait", grpcsim.EngineSGLang, short, long, false, short + faultBound},
		{"hung decode, the gateway's deadlines pass first", grpcsim.EngineSGLang, long, short, true, 2*short + faultBound},
		{"hung prefill, the gateway's deadlines pass first", grpcsim.EngineSGLang, long, short, false, short + faultBound},
		// vLLM runs the legs one after the other: each silence is its own leg's deadline.
		{"vLLM hung decode", grpcsim.EngineVLLM, long, short, true, short + faultBound},
		{"vLLM hung prefill", grpcsim.EngineVLLM, long, short, false, short + faultBound},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			var pf, df []string
			if c.hungDecode {
				df = []string{grpcsim.FaultHang}
			} else {
				pf = []string{grpcsim.FaultHang}
			}
			g, s := blameFleet(t, c.engine, c.handoff, c.limit, pf, df)
			culprit := s[0]
			if c.hungDecode {
				culprit = s[2]
			}
			hitCulprit(t, g, culprit, c.bound)
			assertBlame(t, g, s, culprit)
			require.Eventually(t, func() bool {
				st := culprit.Stats()
				return st.Aborted == st.Requests && st.AbortRPCs == st.Requests
			}, faultBound, 10*time.Millisecond, "every leg of the hung worker is aborted: %+v", culprit.Stats())
		})
	}
}

// With no retry, the engine-reported handoff timeout answers with the silent leg named:
// 502 decode_kv_transfer_failed for a hung decode (the prefill reported), 502
// prefill_kv_transfer_failed for a hung prefill (the decode reported), one handoff timeout
// after the request, the silent leg aborted and charged, the reporter's breaker untouched,
// and smg_pd_bootstrap_failures_total moved by one.
func TestGRPCKVHandoffTimeoutNamesTheSilentLeg(t *testing.T) {
	t.Parallel()
	const handoff = time.Second
	for _, hungDecode := range []bool{true, false} {
		code := map[bool]string{true: "decode_kv_transfer_failed", false: "prefill_kv_transfer_failed"}[hungDecode]
		t.Run(code, func(t *testing.T) {
			t.Parallel()
			g, p, d := pdFleet(t, grpcsim.EngineSGLang, func(role string, c *grpcsim.Config) {
				c.HandoffTimeout = handoff
				if (role == grpcsim.RoleDecode) == hungDecode {
					c.Faults = []string{grpcsim.FaultHang}
				}
			}, func(c *config.Config) { c.DisableRetries = true })
			warm(t, g)
			silent, reporter := d, p
			if !hungDecode {
				silent, reporter = p, d
			}
			start := time.Now()
			r := g.Post(t, "/v1/completions", map[string]any{"model": pdModel, "prompt": "silent peer", "max_tokens": 3}, nil)
			elapsed := time.Since(start)
			require.Equal(t, http.StatusBadGateway, r.Status, string(r.Body))
			assert.Equal(t, code, errCode(t, r))
			assert.Contains(t, r.Object(t)["error"].(map[string]any)["message"], "KVPoll.")
			assert.GreaterOrEqual(t, elapsed, handoff)
			assert.Less(t, elapsed, handoff+faultBound)
			require.Eventually(t, func() bool { s := silent.Stats(); return s.Aborted == 1 && s.AbortRPCs == 1 }, faultBound, 10*time.Millisecond,
				"the silent leg is aborted: %+v", silent.Stats())
			assert.EqualValues(t, 1, reporter.Stats().Errors, "the reporter failed by itself")
			require.Eventually(t, func() bool { return cbOutcomes(t, g, hostOf(silent), "failure") == 1 }, faultBound, 10*time.Millisecond)
			assert.Zero(t, cbOutcomes(t, g, hostOf(reporter), "failure"), "the reporter is not charged")
			assert.EqualValues(t, 1, metric(t, g, "smg_pd_bootstrap_failures_total"), "the failed rendezvous is a bootstrap failure (warm-up moved nothing)")
		})
	}
}

// A gRPC leg whose stream ends before its complete (the malformed fault: one response with
// neither chunk nor complete, then the end of the stream) is that leg's failure, on SGLang
// (parallel) and vLLM (sequential), prefill and decode, streamed or not: the retry serves
// the request on another pair at once (the malformed message commits no stream head), only the malformed worker is charged, and on SGLang the partner
// leg, waiting on the handoff, is aborted.
func TestGRPCStreamEndingBeforeCompleteIsTheLegsFailure(t *testing.T) {
	t.Parallel()
	for _, engine := range []string{grpcsim.EngineSGLang, grpcsim.EngineVLLM} {
		for _, leg := range []string{grpcsim.RolePrefill, grpcsim.RoleDecode} {
			t.Run(engine+" "+leg, func(t *testing.T) {
				t.Parallel()
				var pf, df []string
				if leg == grpcsim.RolePrefill {
					pf = []string{grpcsim.FaultMalformed}
				} else {
					df = []string{grpcsim.FaultMalformed}
				}
				g, s := blameFleet(t, engine, 30*time.Second, 30*time.Second, pf, df)
				culprit, partners := s[0], s[2:]
				if leg == grpcsim.RoleDecode {
					culprit, partners = s[2], s[:2]
				}
				hitCulprit(t, g, culprit, faultBound)
				// A stream is not committed by the malformed message: it is retried too.
				hitCulpritStreaming(t, g, culprit, faultBound)
				assertBlame(t, g, s, culprit)
				if engine == grpcsim.EngineSGLang {
					require.Eventually(t, func() bool {
						n := int64(0)
						for _, p := range partners {
							n += p.Stats().AbortRPCs
						}
						return n == culprit.Stats().Requests
					}, faultBound, 10*time.Millisecond, "each malformed leg's partner is aborted")
				}
			})
		}
	}
}

// A decode that answers token ids outside the tokenizer's vocabulary is a 502
// decode_invalid_response charged to the decode, logged at WARN under the request's id with
// the worker, not a 200 with empty text; the prefill's breaker does not move. SGLang
// (parallel) and vLLM (sequential), streaming and not.
func TestGRPCOutOfVocabularyDecodeIsA502(t *testing.T) {
	t.Parallel()
	for _, engine := range []string{grpcsim.EngineSGLang, grpcsim.EngineVLLM} {
		t.Run(engine, func(t *testing.T) {
			t.Parallel()
			m, _ := qwen3(t)
			logs := &logSink{}
			g, p, d := startPD(t, engine, func(role string, c *grpcsim.Config) {
				if role == grpcsim.RoleDecode {
					c.Faults = []string{grpcsim.FaultOOVTokens}
				}
			}, func(c *config.Config) { c.DisableRetries = true; c.LogLevel = "info" },
				fx.Decorate(func(r *text.Registry) *text.Registry { r.Put(pdModel, m); return r }),
				fx.Decorate(func(*slog.Logger) *slog.Logger {
					return telemetry.NewLogger(telemetry.LogOptions{Level: "info", JSON: true}, logs)
				}))
			reqID := "oov-" + engine
			start := time.Now()
			r := g.Post(t, "/v1/completions", map[string]any{"model": pdModel, "prompt": "say something", "max_tokens": 3},
				http.Header{"X-Request-Id": {reqID}})
			require.Equal(t, http.StatusBadGateway, r.Status, string(r.Body))
			assert.Equal(t, "decode_invalid_response", errCode(t, r))
			assert.Contains(t, r.Object(t)["error"].(map[string]any)["message"], "outside the tokenizer's vocabulary")
			assert.Less(t, time.Since(start), faultBound)
			require.Eventually(t, func() bool { return cbOutcomes(t, g, hostOf(d), "failure") == 1 }, faultBound, 10*time.Millisecond)
			assert.Zero(t, cbOutcomes(t, g, hostOf(p), "failure"))

			var line map[string]any
			for _, l := range logs.records(t, "gRPC decode returned a token id outside the vocabulary") {
				if l["request_id"] == reqID {
					line = l
				}
			}
			require.NotNil(t, line, "the bad answer is logged under the request's id")
			assert.Equal(t, "WARN", line["level"])
			assert.Contains(t, line["worker"], hostOf(d))
			assert.EqualValues(t, grpcsim.OOVTokenID, line["token_id"])

			// Streaming: the first chunk is refused before anything reaches the client.
			r = g.Post(t, "/v1/completions", map[string]any{"model": pdModel, "prompt": "say more", "max_tokens": 3, "stream": true}, nil)
			require.Equal(t, http.StatusBadGateway, r.Status, string(r.Body))
			assert.Equal(t, "decode_invalid_response", errCode(t, r))
		})
	}
}
