package fleet

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// StallPrefix is the system prompt every client of a wedge run sends: with cache_aware
// policies it keeps them all on one pair.
const StallPrefix = "You are a careful assistant. Answer briefly, cite nothing, and keep every answer to one line. "

// SlowAfter is the liveness criterion's long wait: at most the requests in flight when a
// worker hung may take longer.
const SlowAfter = 15 * time.Second

// StallChat returns a Load body for model: a streamed chat request (max_tokens 8) with the
// system prompt StallPrefix and a question unique to the client and its request number.
func StallChat(model string) func(client, i int) []byte {
	return func(client, i int) []byte {
		b, _ := json.Marshal(map[string]any{"model": model, "max_tokens": 8, "stream": true,
			"messages": []map[string]any{{"role": "system", "content": StallPrefix},
				{"role": "user", "content": fmt.Sprintf("question %d of client %d", i, client)}}})
		return b
	}
}

// Wedge is one wedge run: Load with a fault injected part way through.
type Wedge struct {
	// Clients is the number of concurrent client loops (each one request at a time).
	Clients int
	// Warm is the warm-up Load before the fault; its median is the healthy latency.
	Warm time.Duration
	// Run is the measured Load; After is when, from its start, the fault is injected.
	Run, After time.Duration
	// Path and Body are what each client POSTs (Body(client, i)).
	Path string
	Body func(client, i int) []byte
}

// WedgeRun is the outcome of Gateway.Wedge.
type WedgeRun struct {
	// Healthy is the median latency of the warm-up: the same load before the fault.
	Healthy time.Duration
	// Shots are the measured run's requests, in start order.
	Shots []Shot
	// HungAt is when the fault was injected.
	HungAt time.Time
}

// Wedge runs w against the gateway: the warm-up (every request must be 200), then pick
// (which may read the simulators' counters to choose the worker the policy preferred and
// returns the fault to inject), then the measured run with the fault injected w.After
// into it. ctx bounds everything, including requests still in flight at the run's end.
func (g *Gateway) Wedge(t testing.TB, ctx context.Context, w Wedge, pick func() (inject func() error)) WedgeRun {
	t.Helper()
	warm := g.Load(ctx, w.Clients, w.Warm, w.Path, w.Body)
	for _, s := range warm {
		require.Equal(t, http.StatusOK, s.Status, "warm-up: %v %s", s.Err, s.Body)
	}
	inject := pick()
	done := make(chan []Shot, 1)
	go func() { done <- g.Load(ctx, w.Clients, w.Run, w.Path, w.Body) }()
	time.Sleep(w.After)
	err := inject()
	hungAt := time.Now()
	shots := <-done
	require.NoError(t, err, "injecting the fault")
	return WedgeRun{Healthy: Median(warm), Shots: shots, HungAt: hungAt}
}

// Liveness is a wedge run's figures against the liveness criteria.
type Liveness struct {
	// Requests is the number of requests of the run.
	Requests int
	// Healthy is the healthy median latency; Fast the requests under twice it.
	Healthy time.Duration
	Fast    int
	// Slow is the requests over SlowAfter; Worst the longest request.
	Slow  int
	Worst time.Duration
}

// Liveness returns r's figures.
func (r WedgeRun) Liveness() Liveness {
	l := Liveness{Requests: len(r.Shots), Healthy: r.Healthy}
	for _, s := range r.Shots {
		if s.Elapsed < 2*r.Healthy {
			l.Fast++
		}
		if s.Elapsed > SlowAfter {
			l.Slow++
		}
		l.Worst = max(l.Worst, s.Elapsed)
	}
	return l
}

// Share is the fraction of requests under twice the healthy median (0 for none).
func (l Liveness) Share() float64 {
	if l.Requests == 0 {
		return 0
	}
	return float64(l.Fast) / float64(l.Requests)
}

// String is the figures on one line.
func (l Liveness) String() string {
	return fmt.Sprintf("%d requests, healthy median %v, %d (%.1f %%) under 2× it, %d over %v, worst %v",
		l.Requests, l.Healthy.Round(time.Millisecond), l.Fast, 100*l.Share(), l.Slow, SlowAfter, l.Worst.Round(time.Millisecond))
}
