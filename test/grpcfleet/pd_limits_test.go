package grpcfleet_test

import (
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/app/config"
	"github.com/smg-go/smg/test/fleet"
	"github.com/smg-go/smg/test/sim/grpcsim"
)

func inputIDs(n int) []uint32 {
	ids := make([]uint32, n)
	for i := range ids {
		ids[i] = uint32(1000 + i)
	}
	return ids
}

func errCode(t *testing.T, r *fleet.Response) string {
	t.Helper()
	e, ok := r.Object(t)["error"].(map[string]any)
	require.True(t, ok, string(r.Body))
	assert.Equal(t, e["code"], r.Header.Get("X-SMG-Error-Code"))
	return e["code"].(string)
}

// A prompt one token over the smaller window of the two legs is refused before any leg is
// contacted; a prompt exactly at the window is dispatched.
func TestGRPCContextLengthSmallerWindow(t *testing.T) {
	t.Parallel()
	g, p, d := pdFleet(t, grpcsim.EngineSGLang, func(role string, c *grpcsim.Config) {
		c.MaxModelLen = map[string]int{grpcsim.RolePrefill: 4096, grpcsim.RoleDecode: 50}[role]
	}, nil)
	r := g.Post(t, "/generate", map[string]any{"input_ids": inputIDs(51), "sampling_params": map[string]any{"max_new_tokens": 2}}, nil)
	require.Equal(t, http.StatusBadRequest, r.Status, string(r.Body))
	assert.Equal(t, "context_length_exceeded", errCode(t, r))
	msg := r.Object(t)["error"].(map[string]any)["message"].(string)
	assert.Contains(t, msg, "50 tokens")
	assert.Contains(t, msg, "51 input tokens")
	assert.NotContains(t, msg, "worker")
	assert.Zero(t, p.Stats().Requests+d.Stats().Requests, "no leg contacted")

	r = g.Post(t, "/generate", map[string]any{"input_ids": inputIDs(50), "sampling_params": map[string]any{"max_new_tokens": 2}}, nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	handoffClean(t, p, d, 1)

	// Completions with token-id prompts: each prompt of a batch is checked alone.
	r = g.Post(t, "/v1/completions", map[string]any{"model": pdModel, "prompt": [][]uint32{inputIDs(50), inputIDs(51)}, "max_tokens": 2}, nil)
	require.Equal(t, http.StatusBadRequest, r.Status, string(r.Body))
	assert.Equal(t, "context_length_exceeded", errCode(t, r))
	r = g.Post(t, "/v1/completions", map[string]any{"model": pdModel, "prompt": [][]uint32{inputIDs(50), inputIDs(40)}, "max_tokens": 3}, nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	ch := r.Object(t)["choices"].([]any)
	require.Len(t, ch, 2)
	assert.Equal(t, detok(t, grpcsim.HandoffTokens(inputIDs(40), 3)), ch[1].(map[string]any)["text"])
	handoffClean(t, p, d, 3)
}

// Window 1, wait 0: of 8 concurrent requests one is admitted, 7 are shed with Retry-After.
func TestGRPCAdmissionWindowSheds(t *testing.T) {
	t.Parallel()
	g, p, d := pdFleet(t, grpcsim.EngineSGLang, func(role string, c *grpcsim.Config) {
		c.MaxRunningRequests = 1
		if role == grpcsim.RoleDecode {
			c.ITL = 100 * time.Millisecond
		}
	}, func(c *config.Config) { c.PDAdmissionWait = 0; c.DisableRetries = true })
	// Warm the tokenizer so the 8 requests race for the room, not for the load.
	r := g.Post(t, "/generate", map[string]any{"text": "warm", "sampling_params": map[string]any{"max_new_tokens": 1}}, nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	p.Reset()
	d.Reset()

	var wg sync.WaitGroup
	out := make([]*fleet.Response, 8)
	for i := range out {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out[i] = g.Post(t, "/generate", map[string]any{"text": "request " + strconv.Itoa(i), "sampling_params": map[string]any{"max_new_tokens": 10}}, nil)
		}()
	}
	wg.Wait()
	ok, shed := 0, 0
	for _, r := range out {
		switch r.Status {
		case http.StatusOK:
			ok++
		case http.StatusServiceUnavailable:
			shed++
			assert.Equal(t, "worker_overload_protection_shed", errCode(t, r))
			s, err := strconv.Atoi(r.Header.Get("Retry-After"))
			assert.NoError(t, err, "numeric Retry-After")
			assert.Positive(t, s)
		default:
			t.Errorf("unexpected %d: %s", r.Status, r.Body)
		}
	}
	assert.Equal(t, 1, ok)
	assert.Equal(t, 7, shed)
	assert.EqualValues(t, 1, d.Stats().Requests, "only the admitted request reached the decode")
	handoffClean(t, p, d, 1)
}

// n=3 on SGLang fans out into 3 single-sample dispatches, each with its own room: 3
// choices, each the handoff text.
func TestGRPCParallelSamplingFanout(t *testing.T) {
	t.Parallel()
	for _, engine := range []string{grpcsim.EngineSGLang, grpcsim.EngineTokenSpeed} {
		t.Run(engine, func(t *testing.T) {
			t.Parallel()
			g, p, d := pdFleet(t, engine, nil, nil)
			const q = "Three samples please"
			r := g.Post(t, "/v1/chat/completions", map[string]any{"model": pdModel, "max_tokens": 4, "n": 3, "seed": 7,
				"messages": []map[string]string{{"role": "user", "content": q}}}, nil)
			require.Equal(t, http.StatusOK, r.Status, string(r.Body))
			want := detok(t, grpcsim.HandoffTokens(chatPrompt(t, q), 4))
			ch := r.Object(t)["choices"].([]any)
			require.Len(t, ch, 3)
			for i, c := range ch {
				c := c.(map[string]any)
				assert.EqualValues(t, i, c["index"])
				assert.Equal(t, want, c["message"].(map[string]any)["content"])
			}
			assert.EqualValues(t, 12, r.Object(t)["usage"].(map[string]any)["completion_tokens"])
			handoffClean(t, p, d, 3)
		})
	}
}
