package grpcfleet_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/fx"

	"github.com/smg-go/smg/app/config"
	"github.com/smg-go/smg/domain/text"
	"github.com/smg-go/smg/test/fleet"
	"github.com/smg-go/smg/test/sim/grpcsim"
)

// faultBound bounds a fail-fast answer: the partner leg would otherwise wait for its peer
// for the simulators' 30 s handoff timeout.
const faultBound = 5 * time.Second

// warm loads the model's tokenizer with a request refused after the load and before any
// leg (a prompt that is not text), so timed requests measure the dispatch alone.
func warm(t *testing.T, g *fleet.Gateway) {
	t.Helper()
	r := g.Post(t, "/v1/completions", map[string]any{"model": pdModel, "prompt": 12}, nil)
	require.Equal(t, http.StatusBadRequest, r.Status, string(r.Body))
}

// A prefill that fails at once, against a decode waiting for a room that never comes,
// answers at once with the prefill's error; the decode is retired (aborted) at once.
func TestGRPCPrefillFailsFast(t *testing.T) {
	t.Parallel()
	g, p, d := pdFleet(t, grpcsim.EngineSGLang, func(role string, c *grpcsim.Config) {
		if role == grpcsim.RolePrefill {
			c.Faults = []string{"status:503"}
		}
	}, func(c *config.Config) { c.DisableRetries = true })
	warm(t, g)
	start := time.Now()
	r := g.Post(t, "/v1/completions", map[string]any{"model": pdModel, "prompt": "fail fast", "max_tokens": 4}, nil)
	elapsed := time.Since(start)
	require.Equal(t, http.StatusServiceUnavailable, r.Status, string(r.Body))
	assert.Equal(t, "prefill_worker_failed_to_start", errCode(t, r))
	assert.Contains(t, r.Object(t)["error"].(map[string]any)["message"], "prefill worker")
	assert.Less(t, elapsed, faultBound)
	require.Eventually(t, func() bool { s := d.Stats(); return s.Aborted == 1 && s.AbortRPCs == 1 }, faultBound, 10*time.Millisecond,
		"the decode leg is aborted: %+v", d.Stats())
	assert.Zero(t, d.Stats().Errors, "the decode's end is an abort, not an engine error")
	assert.EqualValues(t, 1, p.Stats().Errors)
	hostport := strings.TrimPrefix(p.URL(), "grpc://")
	assert.EqualValues(t, 1, cbOutcomes(t, g, hostport, "failure"), "the prefill's breaker counts the failure")
	assert.Zero(t, cbOutcomes(t, g, strings.TrimPrefix(d.URL(), "grpc://"), "failure"), "the retired decode's breaker does not move")
}

// A retryable prefill failure is retried on the other prefill worker: a fresh pair, fresh
// ids and rooms, one handoff.
func TestGRPCRetryReselectsPrefill(t *testing.T) {
	t.Parallel()
	_, dir := qwen3(t)
	mk := func(role string, faults ...string) grpcsim.Config {
		return grpcsim.Config{Engine: grpcsim.EngineSGLang, Role: role, Model: pdModel, TokenizerPath: dir, Faults: faults}
	}
	s := sims(t, mk(grpcsim.RolePrefill, "status:503"), mk(grpcsim.RolePrefill), mk(grpcsim.RoleDecode))
	cfg := fleet.DefaultConfig()
	cfg.Prefill = []config.PrefillSpec{{URL: s[0].URL(), BootstrapPort: port(s[0].BootstrapPort())},
		{URL: s[1].URL(), BootstrapPort: port(s[1].BootstrapPort())}}
	cfg.Decode = []string{s[2].URL()}
	cfg.RetryInitialBackoffMS, cfg.RetryMaxBackoffMS = 1, 5
	m, _ := qwen3(t) // preloaded: parsing the tokenizer under -race took over the request timeout
	g := fleet.StartGateway(t, cfg, fx.Decorate(func(r *text.Registry) *text.Registry { r.Put(pdModel, m); return r }))
	g.WaitWorkers(t, 3)
	for i := 0; i < 2; i++ { // round robin: one of the two starts on the failing prefill
		r := g.Post(t, "/generate", map[string]any{"text": "retry me " + string(rune('a'+i)), "sampling_params": map[string]any{"max_new_tokens": 2}}, nil)
		require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	}
	assert.Positive(t, s[0].Stats().Requests, "round robin sent a first attempt to the failing prefill")
	assert.Zero(t, s[0].Stats().HandoffsSent)
	assert.EqualValues(t, 2, s[1].Stats().HandoffsSent)
	assert.EqualValues(t, 2, s[2].Stats().HandoffsReceived)
	assert.Zero(t, s[2].Stats().RecomputedPrompts+s[2].Stats().UnmatchedRooms)
	assert.EqualValues(t, 2, cbOutcomes(t, g, strings.TrimPrefix(s[2].URL(), "grpc://"), "success"), "decode successes reach the breaker")
}

// A decode that dies mid-stream after the response was committed: the stream ends without
// [DONE] (no retry is possible), the decode's breaker counts the failure, the prefill's
// does not.
func TestGRPCDecodeDiesMidStream(t *testing.T) {
	t.Parallel()
	g, p, d := pdFleet(t, grpcsim.EngineSGLang, func(role string, c *grpcsim.Config) {
		if role == grpcsim.RoleDecode {
			c.Faults = []string{"die-after:3"}
		}
	}, nil)
	r := g.Post(t, "/v1/completions", map[string]any{"model": pdModel, "prompt": "die midway", "max_tokens": 8, "stream": true}, nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	events, done := sseData(t, r.Body)
	assert.True(t, done, "the broken stream still ends with [DONE]")
	require.NotEmpty(t, events)
	last := events[len(events)-1]
	e, ok := last["error"].(map[string]any)
	require.True(t, ok, "the last event is the in-stream error: %v", last)
	assert.Equal(t, "decode_stream_failed", e["code"])
	assert.NotEmpty(t, e["message"])
	assert.NotEmpty(t, e["type"])
	var b strings.Builder
	for _, ev := range events[:len(events)-1] {
		for _, c := range ev["choices"].([]any) {
			if s, ok := c.(map[string]any)["text"].(string); ok {
				b.WriteString(s)
			}
		}
	}
	m, _ := qwen3(t)
	full := detok(t, grpcsim.HandoffTokens(m.Tokenizer.Encode("die midway", false), 8))
	assert.True(t, strings.HasPrefix(full, b.String()), "what was streamed is a prefix of the handoff text")
	assert.EqualValues(t, 1, d.Stats().Requests, "no retry after the commit")
	require.Eventually(t, func() bool { return cbOutcomes(t, g, strings.TrimPrefix(d.URL(), "grpc://"), "failure") == 1 },
		faultBound, 20*time.Millisecond, "the decode's breaker counts the broken stream")
	assert.Zero(t, cbOutcomes(t, g, strings.TrimPrefix(p.URL(), "grpc://"), "failure"))
}

// The same broken decode on the other streamed routes: chat ends with the OpenAI error
// event and [DONE]; /v1/messages with an Anthropic `event: error` (api_error) and no
// message_stop; /v1/responses with an error event and response.failed; /generate as chat.
func TestGRPCDecodeDiesMidStreamRoutes(t *testing.T) {
	t.Parallel()
	g, _, d := pdFleet(t, grpcsim.EngineSGLang, func(role string, c *grpcsim.Config) {
		if role == grpcsim.RoleDecode {
			c.Faults = []string{"die-after:3"}
		}
	}, nil)
	msgs := []map[string]any{{"role": "user", "content": "die midway"}}

	r := g.Post(t, "/v1/chat/completions", map[string]any{"model": pdModel, "messages": msgs, "max_tokens": 8, "stream": true}, nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	events, done := sseData(t, r.Body)
	assert.True(t, done, "chat: [DONE] after the error")
	require.NotEmpty(t, events)
	e, ok := events[len(events)-1]["error"].(map[string]any)
	require.True(t, ok, "chat: last event is the error: %s", r.Body)
	assert.Equal(t, "decode_stream_failed", e["code"])

	r = g.Post(t, "/v1/messages", map[string]any{"model": pdModel, "messages": msgs, "max_tokens": 8, "stream": true}, nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	body := string(r.Body)
	assert.Contains(t, body, "event: message_start")
	assert.NotContains(t, body, "message_stop")
	i := strings.LastIndex(body, "event: error\ndata: ")
	require.GreaterOrEqual(t, i, 0, "messages: an error event: %s", body)
	var ae map[string]any
	require.NoError(t, json.Unmarshal([]byte(strings.TrimSpace(body[i+len("event: error\ndata: "):])), &ae))
	assert.Equal(t, "error", ae["type"])
	assert.Equal(t, "api_error", ae["error"].(map[string]any)["type"])
	assert.NotEmpty(t, ae["error"].(map[string]any)["message"])

	r = g.Post(t, "/v1/responses", map[string]any{"model": pdModel, "input": "die midway", "max_output_tokens": 8, "stream": true}, nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	body = string(r.Body)
	assert.NotContains(t, body, "response.completed")
	assert.Contains(t, body, "event: error\n")
	assert.Contains(t, body, `"code":"decode_stream_failed"`)
	assert.True(t, strings.Contains(body, "event: response.failed\n"), body)

	r = g.Post(t, "/generate", map[string]any{"text": "die midway", "sampling_params": map[string]any{"max_new_tokens": 8}, "stream": true}, nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	events, done = sseData(t, r.Body)
	assert.True(t, done, "generate: [DONE] after the error")
	require.NotEmpty(t, events)
	e, ok = events[len(events)-1]["error"].(map[string]any)
	require.True(t, ok, "generate: last event is the error: %s", r.Body)
	assert.Equal(t, "decode_stream_failed", e["code"])
	assert.EqualValues(t, 4, d.Stats().Requests, "no retry after the commit")
}

// A streamed /generate with return_logprob is refused clearly (not silently dropped)
// before any leg; other logprobs are served (pd_logprobs_test.go).
func TestGRPCLogprobsRefused(t *testing.T) {
	t.Parallel()
	g, p, d := pdFleet(t, grpcsim.EngineSGLang, nil, nil)
	r := g.Post(t, "/generate", map[string]any{"text": "x", "return_logprob": true, "stream": true}, nil)
	require.Equal(t, http.StatusNotImplemented, r.Status, string(r.Body))
	assert.Equal(t, "not_supported", errCode(t, r))
	assert.Zero(t, p.Stats().Requests+d.Stats().Requests)
}

// A decode that never answers: 504 decode_timeout at --decode-timeout-secs, blamed on the
// decode; the prefill waiting for it is aborted at once.
func TestGRPCDecodeHangsTimesOut(t *testing.T) {
	t.Parallel()
	const limit = time.Second
	g, p, d := pdFleet(t, grpcsim.EngineSGLang, func(role string, c *grpcsim.Config) {
		if role == grpcsim.RoleDecode {
			c.Faults = []string{"hang"}
		}
	}, func(c *config.Config) { c.DecodeTimeout = limit; c.DisableRetries = true })
	warm(t, g)
	start := time.Now()
	r := g.Post(t, "/v1/completions", map[string]any{"model": pdModel, "prompt": "hang on", "max_tokens": 4}, nil)
	elapsed := time.Since(start)
	require.Equal(t, http.StatusGatewayTimeout, r.Status, string(r.Body))
	assert.Equal(t, "decode_timeout", errCode(t, r))
	assert.Contains(t, r.Object(t)["error"].(map[string]any)["message"], "--decode-timeout-secs")
	assert.GreaterOrEqual(t, elapsed, limit)
	assert.Less(t, elapsed, limit+faultBound)
	require.Eventually(t, func() bool { return p.Stats().Aborted == 1 && d.Stats().Aborted == 1 }, faultBound, 10*time.Millisecond,
		"both legs aborted: prefill %+v decode %+v", p.Stats(), d.Stats())
	require.Eventually(t, func() bool { return cbOutcomes(t, g, strings.TrimPrefix(d.URL(), "grpc://"), "failure") >= 1 }, faultBound, 20*time.Millisecond)
	assert.Zero(t, cbOutcomes(t, g, strings.TrimPrefix(p.URL(), "grpc://"), "failure"))
}

// A decode that never answers, with equal deadlines on both legs and two healthy prefills:
// while both legs are silent the prefill (waiting for the decode to claim its room) looks
// just like the decode, so the first timeout is ambiguous. The retry keeps the decode and
// changes the prefill; the decode's deadline passes again, so both silences are the
// decode's: 504 decode_timeout after two deadlines, the decode's breaker charged twice,
// no prefill breaker moved, and every leg aborted.
func TestGRPCHungDecodeWithEqualDeadlinesIsBlamedOnTheDecode(t *testing.T) {
	t.Parallel()
	const limit = time.Second
	g, s := equalDeadlineFleet(t, limit, nil, []string{"hang"})

	start := time.Now()
	r := g.Post(t, "/v1/completions", map[string]any{"model": pdModel, "prompt": "who is silent", "max_tokens": 4}, nil)
	elapsed := time.Since(start)
	require.Equal(t, http.StatusGatewayTimeout, r.Status, string(r.Body))
	assert.Equal(t, "decode_timeout", errCode(t, r))
	assert.Contains(t, r.Object(t)["error"].(map[string]any)["message"], "decode worker")
	assert.GreaterOrEqual(t, elapsed, 2*limit, "two attempts, each waiting out one deadline")
	assert.Less(t, elapsed, 2*limit+faultBound)

	dURL := strings.TrimPrefix(s[2].URL(), "grpc://")
	require.Eventually(t, func() bool { return cbOutcomes(t, g, dURL, "failure") == 2 }, faultBound, 20*time.Millisecond,
		"the decode's breaker is charged with both silences")
	for _, p := range s[:2] {
		assert.Zero(t, cbOutcomes(t, g, strings.TrimPrefix(p.URL(), "grpc://"), "failure"), "a healthy prefill's breaker does not move")
	}
	assert.EqualValues(t, 1, s[0].Stats().Requests, "the retry changed the prefill")
	assert.EqualValues(t, 1, s[1].Stats().Requests, "the retry changed the prefill")
	assert.EqualValues(t, 2, s[2].Stats().Requests, "the retry kept the decode")
	require.Eventually(t, func() bool {
		return s[0].Stats().Aborted == 1 && s[1].Stats().Aborted == 1 && s[2].Stats().Aborted == 2
	}, faultBound, 10*time.Millisecond, "every leg aborted: %+v %+v %+v", s[0].Stats(), s[1].Stats(), s[2].Stats())
}

// The mirror case: one of two prefills never answers, with equal deadlines. The first
// timeout is ambiguous (the decode waits for that prefill's KV); the retry keeps the decode
// and takes the other prefill, that pair answers, so the silence was the prefill's: 200
// after one deadline, the hung prefill's breaker charged once and the decode's not at all.
func TestGRPCHungPrefillWithEqualDeadlinesIsBlamedOnThePrefill(t *testing.T) {
	t.Parallel()
	const limit = time.Second
	g, s := equalDeadlineFleet(t, limit, []string{"hang"}, nil)

	// Round robin: of two requests, one starts on the hung prefill.
	for i := 0; i < 2; i++ {
		start := time.Now()
		r := g.Post(t, "/v1/completions", map[string]any{"model": pdModel, "prompt": "who is silent " + string(rune('a'+i)), "max_tokens": 4}, nil)
		require.Equal(t, http.StatusOK, r.Status, string(r.Body))
		assert.Less(t, time.Since(start), limit+faultBound)
	}
	require.EqualValues(t, 1, s[0].Stats().Requests, "one first attempt reached the hung prefill")
	require.Eventually(t, func() bool { return cbOutcomes(t, g, strings.TrimPrefix(s[0].URL(), "grpc://"), "failure") == 1 },
		faultBound, 20*time.Millisecond, "the hung prefill's breaker is charged once")
	assert.Zero(t, cbOutcomes(t, g, strings.TrimPrefix(s[1].URL(), "grpc://"), "failure"))
	assert.Zero(t, cbOutcomes(t, g, strings.TrimPrefix(s[2].URL(), "grpc://"), "failure"), "the decode's breaker does not move")
	assert.EqualValues(t, 3, s[2].Stats().Requests, "the retry kept the decode")
	assert.EqualValues(t, 2, s[2].Stats().HandoffsReceived)
	assert.Zero(t, s[2].Stats().RecomputedPrompts+s[2].Stats().UnmatchedRooms)
	require.Eventually(t, func() bool { return s[0].Stats().Aborted == 1 }, faultBound, 10*time.Millisecond, "the hung prefill's leg is aborted")
}

// equalDeadlineFleet starts two SGLang prefills (the first with firstPrefillFaults) and one
// decode (with decodeFaults) behind a gateway whose prefill, decode and first-byte deadlines
// are all limit, with fast retries and the tokenizer preloaded and warmed.
func equalDeadlineFleet(t *testing.T, limit time.Duration, firstPrefillFaults, decodeFaults []string) (*fleet.Gateway, []*grpcsim.Server) {
	t.Helper()
	_, dir := qwen3(t)
	mk := func(role string, faults []string) grpcsim.Config {
		return grpcsim.Config{Engine: grpcsim.EngineSGLang, Role: role, Model: pdModel, TokenizerPath: dir, Faults: faults}
	}
	s := sims(t, mk(grpcsim.RolePrefill, firstPrefillFaults), mk(grpcsim.RolePrefill, nil), mk(grpcsim.RoleDecode, decodeFaults))
	cfg := fleet.DefaultConfig()
	cfg.Prefill = []config.PrefillSpec{{URL: s[0].URL(), BootstrapPort: port(s[0].BootstrapPort())},
		{URL: s[1].URL(), BootstrapPort: port(s[1].BootstrapPort())}}
	cfg.Decode = []string{s[2].URL()}
	cfg.PrefillTimeout, cfg.DecodeTimeout, cfg.FirstByteTimeout = limit, limit, limit
	cfg.RetryInitialBackoffMS, cfg.RetryMaxBackoffMS = 1, 5
	m, _ := qwen3(t)
	g := fleet.StartGateway(t, cfg, fx.Decorate(func(r *text.Registry) *text.Registry { r.Put(pdModel, m); return r }))
	g.WaitWorkers(t, 3)
	warm(t, g)
	return g, s
}

// A vLLM NIXL prefill whose KV is gone once it answered (kv-lost: its engine died or
// restarted) makes the decode's pull fail with INTERNAL, which vLLM cannot tell from a
// failure of the decode's own. The retry keeps the decode and changes the prefill; its
// success charges the lost KV to the first prefill, never the decode, and the first
// prefill's answer is no success.
func TestGRPCLostPrefillKVIsChargedToThePrefill(t *testing.T) {
	t.Parallel()
	_, dir := qwen3(t)
	mk := func(role string, faults ...string) grpcsim.Config {
		return grpcsim.Config{Engine: grpcsim.EngineVLLM, Role: role, Model: pdModel, TokenizerPath: dir, Faults: faults}
	}
	s := sims(t, mk(grpcsim.RolePrefill, grpcsim.FaultKVLost), mk(grpcsim.RolePrefill), mk(grpcsim.RoleDecode))
	lost, good, dec := s[0], s[1], s[2]
	cfg := fleet.DefaultConfig()
	cfg.Policy = "round_robin"
	cfg.Prefill = []config.PrefillSpec{{URL: lost.URL()}, {URL: good.URL()}}
	cfg.Decode = []string{dec.URL()}
	cfg.RetryInitialBackoffMS, cfg.RetryMaxBackoffMS = 1, 5
	m, _ := qwen3(t)
	g := fleet.StartGateway(t, cfg, fx.Decorate(func(r *text.Registry) *text.Registry { r.Put(pdModel, m); return r }))
	g.WaitWorkers(t, 3)
	const n = 4
	for i := range n {
		prompt := "lost kv " + string(rune('a'+i))
		start := time.Now()
		r := g.Post(t, "/v1/completions", map[string]any{"model": pdModel, "prompt": prompt, "max_tokens": 3, "stream": i%2 == 1}, nil)
		require.Equal(t, http.StatusOK, r.Status, string(r.Body))
		assert.Less(t, time.Since(start), faultBound)
		if i%2 == 0 {
			assert.Equal(t, detok(t, grpcsim.HandoffTokens(m.Tokenizer.Encode(prompt, false), 3)), r.Object(t)["choices"].([]any)[0].(map[string]any)["text"])
		}
	}
	lostLegs := lost.Stats().Requests
	require.Positive(t, lostLegs, "round robin sent first attempts to the lossy prefill")
	ds := dec.Stats()
	assert.Equal(t, n+lostLegs, ds.Requests, "one decode leg per request, one more per lost handoff")
	assert.EqualValues(t, n, ds.HandoffsReceived)
	assert.Zero(t, ds.RecomputedPrompts)
	assert.EqualValues(t, n, good.Stats().Requests)
	host := func(s *grpcsim.Server) string { return strings.TrimPrefix(s.URL(), "grpc://") }
	// A request's blame is settled just after its answer was written: wait for the last.
	require.Eventually(t, func() bool {
		return cbOutcomes(t, g, host(dec), "success") == n && cbOutcomes(t, g, host(lost), "failure") == float64(lostLegs)
	}, faultBound, 10*time.Millisecond, "every outcome recorded")
	assert.Zero(t, cbOutcomes(t, g, host(dec), "failure"), "the decode is never charged")
	assert.EqualValues(t, n, cbOutcomes(t, g, host(dec), "success"))
	assert.EqualValues(t, lostLegs, cbOutcomes(t, g, host(lost), "failure"), "each lost handoff is the lossy prefill's failure")
	assert.Zero(t, cbOutcomes(t, g, host(lost), "success"), "an answer that handed off lost KV is no success")
	assert.Zero(t, cbOutcomes(t, g, host(good), "failure"))
	assert.EqualValues(t, n, cbOutcomes(t, g, host(good), "success"))
}
