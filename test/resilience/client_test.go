package resilience_test

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/test/fleet"
	"github.com/smg-go/smg/test/sim"
)

// A client that disconnects while the legs are in their handoff (the prefill still
// computing, the decode waiting for its room) cancels both legs at once: each simulator
// counts an abort, nobody waits out the handoff, and no breaker is charged.
func TestClientDisconnectsDuringHandoff(t *testing.T) {
	t.Parallel()
	f := sglang(t, 1, 1, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req := f.Gateway.NewRequest(t, ctx, "/generate", generate("client leaves", 4, true, "prefill:slow-first-byte:20000"), nil)
	done := make(chan error, 1)
	start := time.Now()
	go func() {
		_, err := f.Gateway.Do(req)
		done <- err
	}()
	require.Eventually(t, func() bool {
		return f.Prefills[0].Stats().Running == 1 && f.Decodes[0].Stats().Running == 1
	}, bound, 5*time.Millisecond, "both legs in flight")
	cancel()
	require.ErrorIs(t, <-done, context.Canceled)

	waitIdle(t, f.Sims()...)
	assert.Less(t, time.Since(start), bound, "hang guard: the legs ended long before the 20 s prefill delay")
	for _, s := range f.Sims() {
		st := s.Stats()
		assert.Equal(t, []int64{1, 1, 0, 0}, []int64{st.Requests, st.Aborted, st.Errors, st.UnmatchedRooms}, "%+v", st)
	}
	for _, s := range f.Sims() {
		state, ok, fail := cb(t, f.Gateway, s.URL())
		assert.Equal(t, []float64{0, 0, 0}, []float64{state, ok, fail}, "a client disconnect charges no breaker")
	}
}

// A client that disconnects mid-stream cancels the decode leg (the simulator counts the
// abort) and charges no breaker.
func TestClientDisconnectsMidStream(t *testing.T) {
	t.Parallel()
	f := fleet.Start(t, fleet.Spec{Engine: sim.EngineSGLang, Prefills: 1, Decodes: 1,
		Sim: func(role string, _ int, c *sim.Config) {
			if role == sim.RoleDecode {
				c.ITL = 20 * time.Millisecond
			}
		}})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	resp := f.Gateway.Open(t, ctx, "/v1/chat/completions", chat("client leaves mid-stream", 500, true))
	require.Equal(t, http.StatusOK, resp.StatusCode)
	line, err := bufio.NewReader(resp.Body).ReadString('\n')
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(line, "data: {"), "a first chunk: %q", line)
	cancel()
	_ = resp.Body.Close()

	waitIdle(t, f.Sims()...)
	d := f.Decodes[0].Stats()
	assert.Equal(t, []int64{1, 1, 0}, []int64{d.Requests, d.Aborted, d.Errors}, "%+v", d)
	assert.Less(t, d.GenerationTokens, int64(500), "generation stopped")
	_, ok, fail := cb(t, f.Gateway, f.Decodes[0].URL())
	assert.Equal(t, []float64{0, 0}, []float64{ok, fail})
}

// A client that reads the stream slowly (small reads with pauses, far slower than the
// decode generates) still gets every token and [DONE]: back-pressure, not an error; the
// decode is neither aborted nor failed.
func TestSlowClientReadingTheStream(t *testing.T) {
	t.Parallel()
	f := sglang(t, 1, 1, nil)
	const n = 1500 // ~200 KB of SSE, more than the socket buffers hold
	resp := f.Gateway.Open(t, context.Background(), "/v1/chat/completions", chat("slow reader", n, true))
	require.Equal(t, http.StatusOK, resp.StatusCode)
	start := time.Now()
	var raw bytes.Buffer
	buf := make([]byte, 1024)
	for {
		k, err := resp.Body.Read(buf)
		raw.Write(buf[:k])
		if err == io.EOF {
			break
		}
		require.NoError(t, err)
		require.Less(t, time.Since(start), bound, "hang guard")
		time.Sleep(time.Millisecond)
	}
	events := fleet.ParseEvents(t, raw.Bytes())
	require.NotEmpty(t, events)
	assert.True(t, events[len(events)-1].Done())
	assert.Equal(t, chatText("slow reader", n), chatStreamText(t, events))

	waitIdle(t, f.Sims()...)
	d := f.Decodes[0].Stats()
	assert.Equal(t, []int64{1, 0, 0, n}, []int64{d.Requests, d.Aborted, d.Errors, d.GenerationTokens})
	_, ok, fail := cb(t, f.Gateway, f.Decodes[0].URL())
	assert.Equal(t, []float64{1, 0}, []float64{ok, fail})
}
