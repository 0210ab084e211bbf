package load

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/smg-go/smg/test/sim"
)

// StreamsTarget is the goal for concurrent open SSE streams through one gateway.
const StreamsTarget = 10_000

// openFileLimit returns the soft "Max open files" of process pid from /proc (0 when
// unknown, e.g. not Linux).
func openFileLimit(pid int) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/limits", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "Max open files"); ok {
			if f := strings.Fields(rest); len(f) > 0 {
				n, _ := strconv.Atoi(f[0])
				return n
			}
		}
	}
	return 0
}

// streamsFor sizes the run: want (StreamsTarget when < 0), capped so the gateway's two
// descriptors per stream, the prefill connections being opened and its own files fit
// under limit.
func streamsFor(want, limit, openConc int) int {
	if want < 0 {
		want = StreamsTarget
	}
	if limit > 0 {
		want = min(want, (limit-openConc-100)/2)
	}
	return max(want, 1)
}

// runStreams starts a SGLang fleet whose decode emits one token per second for minutes
// (no batching limit, an admission window above the stream count), and holds the streams
// through its gateway.
func runStreams(ctx context.Context, c SuiteConfig) (*HoldResult, int, error) {
	const openConc = 200
	f, err := StartFleet(ctx, FleetConfig{BinDir: c.BinDir, Engine: sim.EngineSGLang,
		PrefillArgs: []string{"--max-running", "0"},
		// A window above the stream count: the gateway's decode admission window follows
		// the worker's max_running_requests (2048 by default), and would queue the rest.
		DecodeArgs:  []string{"--max-running", "0", "--itl-ms", "1000", "--max-running-requests", "100000"},
		GatewayArgs: c.GatewayArgs, GatewayEnv: c.GatewayEnv})
	if err != nil {
		return nil, 0, err
	}
	defer f.Close()
	limit := openFileLimit(f.Gateway.PID())
	n := streamsFor(c.Streams, limit, openConc)
	timeout := c.StreamsTimeout
	if timeout <= 0 {
		timeout = 120 * time.Second
	}
	fmt.Fprintf(c.Out, "\n### open SSE streams through one gateway\nopening %d streams (gateway open-file limit %d, 2 per stream)...\n", n, limit)
	// Warm the path (pools, first-use allocations) before the baseline.
	if _, err := Run(ctx, NewGateway(f.GatewayURL, Workload{Prompt: BenchPrompt, MaxTokens: 1}, NewClient(4)),
		Options{Concurrency: 4, Requests: 200, Duration: 2 * time.Second}); err != nil {
		return nil, limit, err
	}
	hold := c.StreamsHold
	if hold <= 0 {
		hold = 3 * time.Second
	}
	timeout += hold
	h, err := HoldStreams(ctx, f.GatewayURL, HoldOptions{N: n, OpenConcurrency: openConc, Hold: hold,
		Timeout: timeout, Workload: Workload{Prompt: BenchPrompt, MaxTokens: 600}})
	if err != nil {
		return &h, limit, err
	}
	WriteHold(c.Out, h)
	return &h, limit, nil
}

// WriteHold prints an open-streams result.
func WriteHold(out interface{ Write([]byte) (int, error) }, h HoldResult) {
	rss, heap, stack, g := h.PerStream()
	fmt.Fprintf(out, "streams requested %d, opened %d in %s, failed %d, still open when measured %d\n",
		h.Requested, h.Opened, h.OpenTime.Round(time.Millisecond), h.Failed, h.StillOpen)
	if h.FirstError != "" {
		fmt.Fprintf(out, "first failure: %s\n", h.FirstError)
	}
	fmt.Fprintf(out, "gateway            RSS MB  heap MB  stacks MB  goroutines\n")
	for _, r := range []struct {
		name string
		m    GatewayMem
	}{{"before", h.Base}, {"streams open", h.Held}, {"after close", h.After}} {
		fmt.Fprintf(out, "%-16s %8.1f %8.1f %10.1f %11d\n", r.name, mb(r.m.RSS), mb(r.m.HeapInuse), mb(r.m.StackInuse), r.m.Goroutines)
	}
	fmt.Fprintf(out, "per open stream: RSS %.1f KB, heap %.1f KB, stacks %.1f KB, %.2f goroutines\n",
		rss/1024, heap/1024, stack/1024, g)
}

func mb(b int64) float64 { return float64(b) / (1 << 20) }
