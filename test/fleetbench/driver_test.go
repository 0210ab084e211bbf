package fleetbench_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/test/fleetbench"
)

// fakeGateway streams a chat completion: a role-only chunk, then (after firstDelay) three
// content chunks, a usage chunk with 7 completion tokens and [DONE]. It records the routing
// keys and the message counts it received.
type fakeGateway struct {
	*httptest.Server
	firstDelay time.Duration
	mu         sync.Mutex
	keys       []string
	hold       map[string]time.Duration // by routing key: how long to hold the answer
	noDone     bool
	status     int
}

func newFake(t *testing.T) *fakeGateway {
	g := &fakeGateway{hold: map[string]time.Duration{}}
	g.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			Stream        bool            `json:"stream"`
			StreamOptions map[string]bool `json:"stream_options"`
		}
		if r.URL.Path != "/v1/chat/completions" || json.NewDecoder(r.Body).Decode(&body) != nil || !body.Stream || !body.StreamOptions["include_usage"] {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		key := r.Header.Get("X-Smg-Routing-Key")
		g.mu.Lock()
		g.keys = append(g.keys, key)
		hold := g.hold[key]
		g.mu.Unlock()
		if g.status != 0 {
			http.Error(w, `{"error":{"message":"shed"}}`, g.status)
			return
		}
		time.Sleep(hold)
		w.Header().Set("Content-Type", "text/event-stream")
		fl := w.(http.Flusher)
		fmt.Fprint(w, "data: {\"choices\":[{\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}\n\n")
		fl.Flush()
		time.Sleep(g.firstDelay)
		for _, word := range []string{"a", " b", " c"} {
			fmt.Fprintf(w, "data: {\"choices\":[{\"delta\":{\"content\":%q}}]}\n\n", word)
			fl.Flush()
		}
		fmt.Fprint(w, "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":7}}\n\n")
		if !g.noDone {
			fmt.Fprint(w, "data: [DONE]\n\n")
		}
	}))
	t.Cleanup(g.Close)
	return g
}

func req(key string, after int) fleetbench.Request {
	return fleetbench.Request{Messages: []fleetbench.Message{{Role: "user", Content: "hi"}}, MaxTokens: 3, Key: key, After: after}
}

func drive(t *testing.T, urls []string, reqs []fleetbench.Request, arrivals []time.Duration) []fleetbench.Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	rs, elapsed, err := fleetbench.Drive(ctx, urls, reqs, arrivals, fleetbench.DriveOptions{Duration: 10 * time.Second, RequestTimeout: 10 * time.Second})
	require.NoError(t, err)
	assert.Positive(t, elapsed)
	return rs
}

func TestDriveMeasuresTTFTAtTheFirstContentChunk(t *testing.T) {
	t.Parallel()
	g := newFake(t)
	g.firstDelay = 50 * time.Millisecond
	rs := drive(t, []string{g.URL}, []fleetbench.Request{req("u1", -1)}, []time.Duration{0})
	require.Len(t, rs, 1)
	r := rs[0]
	require.Empty(t, r.Err)
	// The role-only chunk came at once; content only after firstDelay.
	assert.GreaterOrEqual(t, r.TTFT, g.firstDelay)
	assert.LessOrEqual(t, r.TTFT, r.E2E)
	assert.Equal(t, 7, r.OutputTokens, "usage.completion_tokens")
	assert.Equal(t, []string{"u1"}, g.keys, "the routing key header")
}

func TestDriveSpreadsRoundRobinAndStopsAtTheDuration(t *testing.T) {
	t.Parallel()
	a, b := newFake(t), newFake(t)
	reqs := []fleetbench.Request{req("k0", -1), req("k1", -1), req("k2", -1), req("k3", -1), req("late", -1)}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	rs, _, err := fleetbench.Drive(ctx, []string{a.URL, b.URL}, reqs, []time.Duration{0, 0, 0, 0, time.Hour},
		fleetbench.DriveOptions{Duration: time.Second})
	require.NoError(t, err)
	require.Len(t, rs, 4, "an arrival after the duration is not sent")
	assert.ElementsMatch(t, []string{"k0", "k2"}, a.keys)
	assert.ElementsMatch(t, []string{"k1", "k3"}, b.keys)
	for i, r := range rs {
		assert.Equal(t, i%2, r.Replica)
		assert.Empty(t, r.Err)
	}
}

func TestDriveSendsAFollowUpAfterThePreviousTurnEnded(t *testing.T) {
	t.Parallel()
	g := newFake(t)
	g.hold["turn0"] = 100 * time.Millisecond
	rs := drive(t, []string{g.URL}, []fleetbench.Request{req("turn0", -1), req("turn1", 0)}, []time.Duration{0, 0})
	require.Len(t, rs, 2)
	assert.GreaterOrEqual(t, rs[1].Sent, rs[0].Sent+rs[0].E2E, "turn 1 waits for turn 0's answer")
	assert.Equal(t, []string{"turn0", "turn1"}, g.keys)
}

func TestDriveCountsIncompleteAndRejectedStreamsAsErrors(t *testing.T) {
	t.Parallel()
	noDone := newFake(t)
	noDone.noDone = true
	shed := newFake(t)
	shed.status = http.StatusServiceUnavailable
	rs := drive(t, []string{noDone.URL, shed.URL}, []fleetbench.Request{req("a", -1), req("b", -1)}, []time.Duration{0, 0})
	require.Len(t, rs, 2)
	assert.Equal(t, "stream ended without [DONE]", rs[0].Err)
	assert.Contains(t, rs[1].Err, "HTTP 503")
}

func TestDriveRejectsBadInput(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, _, err := fleetbench.Drive(ctx, nil, []fleetbench.Request{req("a", -1)}, []time.Duration{0}, fleetbench.DriveOptions{Duration: time.Second})
	assert.Error(t, err)
	_, _, err = fleetbench.Drive(ctx, []string{"http://127.0.0.1:1"}, []fleetbench.Request{req("a", -1)}, nil, fleetbench.DriveOptions{Duration: time.Second})
	assert.Error(t, err)
	_, _, err = fleetbench.Drive(ctx, []string{"http://127.0.0.1:1"}, nil, nil, fleetbench.DriveOptions{})
	assert.Error(t, err)
}
