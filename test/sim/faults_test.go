package sim_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/test/sim"
)

func TestFaultStatusShapes(t *testing.T) {
	t.Parallel()
	s := start(t, cfgOf(sim.EngineSGLang, sim.RoleDecode))
	cases := []struct {
		fault any
		code  int
		body  string
	}{
		{"decode:status:429", 429, `{"error":{"message":"sim fault: injected status 429"}}`},
		{"any:status:503", 503, `{"detail":"sim fault: injected status 503"}`},
		{[]string{"prefill:status:500", "decode:status:400"}, 400, `{"error":{"message":"sim fault: injected status 400"}}`},
		{"decode:bogus", 400, `{"error":{"message":"sim: unknown fault kind \"bogus\" in \"bogus\""}}`},
		{"everyone:reset", 400, `{"error":{"message":"sim_fault \"everyone:reset\": want <prefill|decode|any>:<kind>[:<arg>]"}}`},
		{"decode:status:200", 400, `{"error":{"message":"sim: fault \"status:200\": status must be 400..599"}}`},
	}
	for _, tc := range cases {
		// No bootstrap fields: a status fault answers before any validation or handoff.
		r := post(s.URL()+"/generate", map[string]any{"text": "x", "sim_fault": tc.fault})
		require.NoError(t, r.err)
		assert.Equal(t, tc.code, r.status, "%v", tc.fault)
		assert.JSONEq(t, tc.body, string(r.body), "%v", tc.fault)
	}
	assert.EqualValues(t, len(cases), s.Stats().Errors)
}

func TestFaultsCutOrCorruptTheAnswer(t *testing.T) {
	t.Parallel()
	d := start(t, cfgOf(sim.EngineVLLM, sim.RoleDecode, func(c *sim.Config) { c.HangMax = 50 * time.Millisecond }))
	body := func(fault string, stream bool) map[string]any {
		return map[string]any{"prompt": "fault me", "max_tokens": 4, "stream": stream, "sim_fault": fault}
	}
	t.Run("reset closes without an answer", func(t *testing.T) {
		r := post(d.URL()+"/v1/completions", body("decode:reset", false))
		require.Error(t, r.err)
		assert.Zero(t, r.status)
	})
	t.Run("hang ends at hang-max with a closed connection", func(t *testing.T) {
		r := post(d.URL()+"/v1/completions", body("any:hang", false))
		require.Error(t, r.err)
	})
	t.Run("malformed is a 200 with invalid JSON", func(t *testing.T) {
		r := post(d.URL()+"/v1/completions", body("decode:malformed", false))
		require.NoError(t, r.err)
		assert.Equal(t, http.StatusOK, r.status)
		assert.False(t, json.Valid(r.body), "%s", r.body)
		rs := post(d.URL()+"/v1/completions", body("decode:malformed", true))
		events := sseData(t, rs.body)
		require.NotEmpty(t, events)
		assert.False(t, json.Valid([]byte(events[0])))
	})
	t.Run("die-after streams k tokens then cuts", func(t *testing.T) {
		r := post(d.URL()+"/v1/completions", body("decode:die-after:2", true))
		require.ErrorIs(t, r.err, io.ErrUnexpectedEOF)
		assert.Equal(t, http.StatusOK, r.status)
		events := sseData(t, r.body)
		require.Len(t, events, 2)
		assert.NotContains(t, string(r.body), "[DONE]")
	})
	t.Run("die-after on a JSON answer truncates the body", func(t *testing.T) {
		r := post(d.URL()+"/v1/completions", body("decode:die-after:1", false))
		require.Error(t, r.err)
		assert.Equal(t, http.StatusOK, r.status)
		assert.False(t, json.Valid(r.body))
	})
	t.Run("slow-first-byte still answers", func(t *testing.T) {
		r := post(d.URL()+"/v1/completions", body("decode:slow-first-byte:20", false))
		assert.Equal(t, sim.RecomputeText("fault me", 4), parseCompl(t, r).Choices[0].Text)
	})
	t.Run("delay-body sends the head first", func(t *testing.T) {
		r := post(d.URL()+"/v1/completions", body("decode:delay-body:20", true))
		require.NoError(t, r.err)
		events := sseData(t, r.body)
		require.Len(t, events, 5)
		assert.Equal(t, "[DONE]", events[4])
	})
}

func TestInstanceFaults(t *testing.T) {
	t.Parallel()
	_, err := sim.Start(cfgOf(sim.EngineVLLM, sim.RoleDecode, func(c *sim.Config) { c.Faults = []string{"explode"} }))
	require.EqualError(t, err, `sim: unknown fault kind "explode" in "explode"`)
	s := start(t, cfgOf(sim.EngineVLLM, sim.RoleDecode, func(c *sim.Config) { c.Faults = []string{"status:502"} }))
	for _, path := range []string{"/v1/completions", "/v1/rerank"} {
		r := post(s.URL()+path, map[string]any{"prompt": "a", "query": "q", "documents": []string{"d"}})
		assert.Equal(t, http.StatusBadGateway, r.status, path)
		assert.Equal(t, "InternalServerError", r.json(t)["error"].(map[string]any)["type"])
	}
	assert.Equal(t, http.StatusOK, get(s.URL()+"/health").status, "health is not faulted")
}

func TestAbortedFreesTheRoom(t *testing.T) {
	t.Parallel()
	for _, role := range []string{sim.RolePrefill, sim.RoleDecode} {
		t.Run(role, func(t *testing.T) {
			t.Parallel()
			p, d := pair(t, sim.EngineSGLang)
			target := map[string]*sim.Server{sim.RolePrefill: p, sim.RoleDecode: d}[role]
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan result, 1)
			go func() {
				done <- do(ctx, http.MethodPost, target.URL()+"/generate", sglangBody(p, uint64(31), map[string]any{"text": "abandon"}))
			}()
			eventually(t, func() bool { return p.PendingHandoffs() == 1 }, "room held")
			cancel()
			require.Error(t, (<-done).err)
			eventually(t, func() bool { return target.Stats().Aborted == 1 }, "aborted counted")
			eventually(t, func() bool { return p.PendingHandoffs() == 0 }, "room freed")
			eventually(t, func() bool { return target.Stats().Running == 0 }, "running drained")
			assert.Zero(t, target.Stats().Errors)
		})
	}
}

func TestRunningAndQueueing(t *testing.T) {
	t.Parallel()
	s := start(t, cfgOf(sim.EngineVLLM, sim.RoleDecode, func(c *sim.Config) {
		c.MaxRunning = 1
		c.ITL = 5 * time.Millisecond
	}))
	// Five hung requests are all "running" (inside the engine) at once.
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for i := 0; i < 5; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			do(ctx, http.MethodPost, s.URL()+"/v1/completions", map[string]any{"prompt": "x", "sim_fault": "decode:hang"})
		}()
	}
	eventually(t, func() bool { return s.Stats().Running == 5 }, "5 running")
	cancel()
	wg.Wait()
	eventually(t, func() bool { return s.Stats().Running == 0 }, "drained")
	assert.EqualValues(t, 5, s.Stats().MaxRunningSeen)
	eventually(t, func() bool { return s.Stats().Aborted == 5 }, "5 aborted")

	// With MaxRunning 1, a second request waits for the first one's compute slot.
	ctx2, cancel2 := context.WithCancel(context.Background())
	defer cancel2()
	req, err := http.NewRequestWithContext(ctx2, http.MethodPost, s.URL()+"/v1/completions",
		strings.NewReader(`{"prompt":"long","max_tokens":30000,"stream":true}`))
	require.NoError(t, err)
	resp, err := client.Do(req)
	require.NoError(t, err)
	_, err = bufio.NewReader(resp.Body).ReadString('\n')
	require.NoError(t, err)
	second := make(chan result, 1)
	go func() { second <- post(s.URL()+"/v1/completions", map[string]any{"prompt": "short", "max_tokens": 1}) }()
	eventually(t, func() bool { return s.Stats().Waiting == 1 }, "second request queued")
	cancel2()
	_ = resp.Body.Close()
	assert.Equal(t, http.StatusOK, (<-second).status)
	// The cut stream frees its compute slot (and so lets the second one run) before it
	// leaves the running gauge: wait until it has, so Running cannot move under Reset.
	eventually(t, func() bool { return s.Stats().Running == 0 }, "the cut stream left")
	s.Reset()
	st := s.Stats()
	assert.Zero(t, st.Requests)
	assert.Zero(t, st.Aborted)
	assert.Equal(t, st.Running, st.MaxRunningSeen)
}
