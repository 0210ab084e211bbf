package policies_test

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/app/config"
	"github.com/smg-go/smg/test/fleet"
	"github.com/smg-go/smg/test/sim"
)

// generate is a SGLang /generate body for text with maxTokens output tokens.
func generate(text string, maxTokens int) map[string]any {
	return map[string]any{"text": text, "sampling_params": map[string]any{"max_new_tokens": maxTokens}}
}

// sglangFleet starts prefills × decodes SGLang simulators as startup workers behind a gateway
// whose policies policy edits.
func sglangFleet(t *testing.T, prefills, decodes int, policy func(*config.Config), simCfg func(role string, i int, c *sim.Config)) *fleet.Fleet {
	t.Helper()
	return fleet.Start(t, fleet.Spec{Engine: sim.EngineSGLang, Prefills: prefills, Decodes: decodes,
		Gateway: policy, Sim: simCfg})
}

// burst sends n requests at once — every goroutine waits on one start signal — and returns
// the statuses. Each request is bounded by fleet.RequestTimeout.
func burst(t *testing.T, g *fleet.Gateway, n int, body func(i int) map[string]any, hdr func(i int) http.Header) []int {
	t.Helper()
	status := make([]int, n)
	errs := make([]error, n)
	bodies := make([][]byte, n)
	for i := range n {
		bodies[i] = fleet.Encode(t, body(i))
	}
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var h http.Header
			if hdr != nil {
				h = hdr(i)
			}
			<-start
			r, err := g.Send(context.Background(), "/generate", bodies[i], h)
			if err != nil {
				errs[i] = err
				return
			}
			status[i] = r.Status
		}()
	}
	close(start)
	wg.Wait()
	for i, err := range errs {
		require.NoError(t, err, "request %d", i)
	}
	return status
}

// used sends one request and returns the index of the prefill and of the decode whose
// request counter moved (exactly one of each must move).
func used(t *testing.T, f *fleet.Fleet, body map[string]any, hdr http.Header) (prefill, decode int) {
	t.Helper()
	before := counts(f)
	r := f.Gateway.Post(t, "/generate", body, hdr)
	require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
	after := counts(f)
	prefill, decode = -1, -1
	for i := range f.Prefills {
		if after[i] != before[i] {
			require.Equal(t, -1, prefill, "one prefill per request: %v → %v", before, after)
			prefill = i
		}
	}
	for i := range f.Decodes {
		j := len(f.Prefills) + i
		if after[j] != before[j] {
			require.Equal(t, -1, decode, "one decode per request: %v → %v", before, after)
			decode = i
		}
	}
	require.True(t, prefill >= 0 && decode >= 0, "both legs ran: %v → %v", before, after)
	return prefill, decode
}

// counts returns the request counters of the prefills then the decodes.
func counts(f *fleet.Fleet) []int64 {
	var out []int64
	for _, s := range f.Sims() {
		out = append(out, s.Stats().Requests)
	}
	return out
}

// waitIdle waits until no simulator of f has a request running (at most 5 s).
func waitIdle(t *testing.T, f *fleet.Fleet) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for fleet.SumStats(f.Sims()...).Running != 0 {
		require.False(t, time.Now().After(deadline), "sims still running: %+v", fleet.SumStats(f.Sims()...))
		time.Sleep(10 * time.Millisecond)
	}
}
