package grpcfleet_test

import (
	"context"
	"os"
	"runtime"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/test/load"
	"github.com/smg-go/smg/test/sim/grpcsim"
)

// TestBenchGRPCGatewayVsDirect compares the gateway (tokenize, template-free completions,
// both Generate RPCs, detokenize, the OpenAI body or SSE) with a direct gRPC client doing
// the same two legs and the same tokenizer work (load.DirectGRPCSGLang), in alternating
// phases on one SGLang gRPC fleet with zero latency: the added p50 and the throughput
// ratio. In-process (gateway, simulators and client share the test binary); run with
// SMG_BENCH_GRPC=1 (make bench). Every handoff is checked afterwards. CPU per request is
// the whole process's (user+sys, simulators and client included) over a phase's requests;
// the gateway phase minus the direct phase is the gateway's added CPU per request, a
// figure less noisy than throughput on a shared machine. A third mode in every pair,
// load.HTTPHop, puts the direct client's work behind a bare net/http handler reached by
// the same HTTP client. Non-streaming, hop/direct is the ceiling an HTTP hop leaves on
// this machine and gateway/hop what the gateway's own work costs against it; streamed,
// the hop flushes every decode message (a plain relay) where the gateway flushes only
// when no message waits, so there it is a reference, not a ceiling.
func TestBenchGRPCGatewayVsDirect(t *testing.T) {
	if os.Getenv("SMG_BENCH_GRPC") != "1" {
		t.Skip("benchmark: set SMG_BENCH_GRPC=1")
	}
	g, p, d := pdFleet(t, grpcsim.EngineSGLang, func(_ string, c *grpcsim.Config) { c.MaxRunningRequests = 100000 }, nil)
	prompt := strings.Repeat("the quick brown fox jumps over the lazy dog ", 2)
	// The probe samples the process's CPU time and its heap allocations so far (a count,
	// carried in a Duration): allocations per request do not depend on the machine's load.
	cpu := load.CPUProbe(map[string]int{"process": 0})
	probe := func() map[string]time.Duration {
		m := cpu()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		m["mallocs"] = time.Duration(ms.Mallocs)
		return m
	}
	allocs := func(s load.Summary) float64 { return float64(s.CPU["mallocs"]) / float64(max(s.OK, 1)) }
	for _, stream := range []bool{false, true} {
		wl := load.Workload{Model: pdModel, Prompt: prompt, MaxTokens: 16, Stream: stream}
		gw := load.NewGateway(g.URL, wl, load.NewClient(64))
		direct := directSGLang(t, p, d, wl)
		hop, err := load.NewHTTPHop(direct, wl, load.NewClient(64))
		require.NoError(t, err)
		c, err := load.Compare(context.Background(), "sglang-grpc", stream, gw, direct, load.CompareOptions{
			Warmup:    load.Options{Concurrency: 8, Requests: 200, Duration: 2 * time.Second},
			Phase:     load.Options{Concurrency: 8, Requests: 20000, Duration: 1500 * time.Millisecond},
			Pairs:     3,
			Probe:     probe,
			Reference: hop,
		})
		require.NoError(t, hop.Close())
		require.NoError(t, err)
		var added []float64
		for i, pr := range c.Pairs {
			r := pr.Ratios()
			gwCPU, dCPU := pr.A.CPUPerRequest("process"), pr.B.CPUPerRequest("process")
			added = append(added, gwCPU-dCPU)
			t.Logf("stream=%t pair %d: gateway %.0f req/s p50 %.2f ms %.0f µs CPU/req %.0f allocs/req | direct %.0f req/s p50 %.2f ms %.0f µs CPU/req %.0f allocs/req | throughput ratio %.2f, added p50 %.2f ms, added CPU %.0f µs/req",
				stream, i+1, pr.A.Throughput, float64(pr.A.Latency.P50)/1e6, gwCPU, allocs(pr.A), pr.B.Throughput, float64(pr.B.Latency.P50)/1e6, dCPU, allocs(pr.B), r.Throughput, r.AddedP50, gwCPU-dCPU)
			t.Logf("stream=%t pair %d: hop %.0f req/s %.0f µs CPU/req %.0f allocs/req | hop/direct %.2f, gateway/hop %.2f",
				stream, i+1, pr.Ref.Throughput, pr.Ref.CPUPerRequest("process"), allocs(pr.Ref), r.RefThroughput, r.OfRef)
		}
		med := c.Median()
		sort.Float64s(added)
		t.Logf("stream=%t median: throughput ratio %.2f, added p50 %.2f ms, p50 ratio %.2f, added CPU %.0f µs/req; hop/direct %.2f, gateway/hop %.2f",
			stream, med.Throughput, med.AddedP50, med.P50, added[len(added)/2], med.RefThroughput, med.OfRef)
	}
	ps, ds := p.Stats(), d.Stats()
	require.Equal(t, ps.HandoffsSent, ds.HandoffsReceived)
	require.Equal(t, ds.Requests, ds.HandoffsReceived, "every decode got its KV")
	require.Zero(t, ds.RecomputedPrompts+ps.UnmatchedRooms+ds.UnmatchedRooms+ps.DuplicateRooms+ds.DuplicateRooms+ps.Errors+ds.Errors)
}
