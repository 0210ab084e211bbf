package resilience_test

import (
	"context"
	"net/http"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/test/fleet"
)

// Soak bounds (`make soak`): SoakRequests requests through a simulated SGLang 2P+2D fleet
// at SoakConcurrency, after a warm-up at the same concurrency so connection pools are
// already at their working size when the baseline is taken.
const (
	soakRequests    = 20000
	soakWarmup      = 1000
	soakConcurrency = 32
	// soakGoroutineSlack is how many working goroutines (idle pooled connections excluded)
	// above the baseline are tolerated once the fleet is idle again.
	soakGoroutineSlack = 4
	// soakHeapSlack is the heap growth tolerated over the baseline (bytes): 20,000 leaked
	// requests of even 1 KB each would exceed it.
	soakHeapSlack = 16 << 20
	soakLimit     = 10 * time.Minute
)

// soakBody returns request i of the soak mix: mostly streamed and non-streamed chat, 2% a
// prefill 4xx, 2% a decode that dies mid-stream, 1% a client that leaves mid-stream.
func soakBody(i int) (body map[string]any, leave bool) {
	switch {
	case i%100 < 2:
		return chat("soak rejected", 4, false, "prefill:status:400"), false
	case i%100 < 4:
		return chat("soak broken stream", 6, true, "decode:die-after:2"), false
	case i%100 < 5:
		return chat("soak leaver", 64, true), true
	case i%2 == 0:
		return chat("soak streamed prompt", 8, true), false
	}
	return chat("soak plain prompt", 8, false), false
}

func soakRun(t *testing.T, g *fleet.Gateway, from, to int) (statuses map[int]int64) {
	t.Helper()
	var next atomic.Int64
	next.Store(int64(from))
	var mu sync.Mutex
	statuses = map[int]int64{}
	var wg sync.WaitGroup
	deadline := time.Now().Add(soakLimit)
	for range soakConcurrency {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= to || time.Now().After(deadline) {
					return
				}
				body, leave := soakBody(i)
				status := soakOne(t, g, body, leave)
				mu.Lock()
				statuses[status]++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return statuses
}

// soakOne sends one request; a leaver reads the first bytes of its stream and hangs up.
// It returns the status (0 for a transport error).
func soakOne(t *testing.T, g *fleet.Gateway, body map[string]any, leave bool) int {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req := g.NewRequest(t, ctx, "/v1/chat/completions", body, nil)
	if !leave {
		r, err := g.Do(req)
		if err != nil {
			return 0
		}
		return r.Status
	}
	resp, err := g.Client.Do(req)
	if err != nil {
		return 0
	}
	buf := make([]byte, 64)
	_, _ = resp.Body.Read(buf)
	cancel()
	_ = resp.Body.Close()
	return resp.StatusCode
}

type soakSample struct {
	goroutines int // all goroutines
	idleConns  int // goroutines of idle keep-alive connections (pool sizes vary run to run)
	heapInuse  uint64
}

// working is the number of goroutines that are not parked on an idle pooled connection:
// the ones a leak would add to.
func (s soakSample) working() int { return s.goroutines - s.idleConns }

func soakMeasure(g *fleet.Gateway) soakSample {
	g.Client.CloseIdleConnections()
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	buf := make([]byte, 8<<20)
	stacks := strings.Split(string(buf[:runtime.Stack(buf, true)]), "\n\n")
	idle := 0
	for _, st := range stacks {
		switch {
		case strings.Contains(st, "net/http.(*persistConn).writeLoop"),
			strings.Contains(st, "net/http.(*persistConn).readLoop") && strings.Contains(st, "bufio.(*Reader).Peek"),
			strings.Contains(st, "net/http.(*conn).serve") && strings.Contains(st, "bufio.(*Reader).Peek") && !strings.Contains(st, "ServeHTTP"):
			idle++
		}
	}
	return soakSample{goroutines: len(stacks), idleConns: idle, heapInuse: ms.HeapInuse}
}

// TestSoak (`make soak`, SMG_SOAK=1) sends 20,000 requests — a mix of streamed, plain,
// rejected, broken and abandoned ones — through an in-process gateway and a simulated fleet,
// then checks that goroutines and heap return to the warm baseline once the fleet is idle.
// The figures are logged.
func TestSoak(t *testing.T) {
	if os.Getenv("SMG_SOAK") == "" {
		t.Skip("set SMG_SOAK=1 (make soak) to run the 20,000-request soak")
	}
	f := sglang(t, 2, 2, nil)
	g := f.Gateway

	warm := soakRun(t, g, 0, soakWarmup)
	waitIdle(t, f.Sims()...)
	time.Sleep(200 * time.Millisecond)
	base := soakMeasure(g)
	t.Logf("warm-up %d requests %v; baseline: %d goroutines (%d on idle pooled connections), heap in use %.1f MiB",
		soakWarmup, warm, base.goroutines, base.idleConns, float64(base.heapInuse)/(1<<20))

	start := time.Now()
	statuses := soakRun(t, g, soakWarmup, soakWarmup+soakRequests)
	took := time.Since(start)
	var sent int64
	for _, n := range statuses {
		sent += n
	}
	require.Equal(t, int64(soakRequests), sent, "all requests sent within %s", soakLimit)
	var peak runtime.MemStats
	runtime.ReadMemStats(&peak)
	waitIdle(t, f.Sims()...)

	var after soakSample
	settled := assert.Eventually(t, func() bool {
		after = soakMeasure(g)
		return after.working() <= base.working()+soakGoroutineSlack
	}, 30*time.Second, 250*time.Millisecond, "goroutines (idle pooled connections aside) back to the baseline")
	t.Logf("soak: %d requests in %s (%.0f req/s, concurrency %d); statuses %v",
		soakRequests, took.Round(time.Millisecond), float64(soakRequests)/took.Seconds(), soakConcurrency, statuses)
	t.Logf("goroutines: baseline %d working + %d idle-connection, after %d working + %d idle-connection (settled %v); heap in use: baseline %.1f MiB, peak %.1f MiB, after %.1f MiB; total alloc %.0f MiB",
		base.working(), base.idleConns, after.working(), after.idleConns, settled, float64(base.heapInuse)/(1<<20), float64(peak.HeapInuse)/(1<<20),
		float64(after.heapInuse)/(1<<20), float64(peak.TotalAlloc)/(1<<20))
	assert.LessOrEqual(t, after.heapInuse, base.heapInuse+soakHeapSlack, "heap back to the baseline")

	st := fleet.SumStats(f.Sims()...)
	t.Logf("sims: %+v", st)
	assert.Zero(t, st.DuplicateRooms)
	assert.Zero(t, st.UnmatchedRooms)
	assert.Zero(t, st.Running)
	for _, s := range f.Sims() {
		assert.Zero(t, s.PendingHandoffs(), "%s holds no handoff", s.URL())
	}
	ok := statuses[http.StatusOK]
	assert.Equal(t, int64(soakRequests*2/100), statuses[http.StatusBadRequest], "the rejected share")
	assert.Equal(t, int64(soakRequests)-statuses[http.StatusBadRequest], ok, "everything else answered 200 (broken streams too: the error is in the stream)")
}
