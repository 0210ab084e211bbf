package load

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/smg-go/smg/test/sim"
)

// ScaleConfig bounds the fleet-size run: gateway CPU per request as the number of registered
// workers grows, on zero-latency vLLM NIXL sims (one smg-sim process per leg, --instances N).
type ScaleConfig struct {
	// BinDir holds smg and smg-sim.
	BinDir string
	// Sizes are the workers per leg (default 2, 64, 512); Policies the gateway --policy values
	// (default round_robin, power_of_two, cache_aware).
	Sizes    []int
	Policies []string
	// Concurrency is the requests in flight (default 32); Requests and Phase bound one
	// measured phase, Warmup the unrecorded warm-up before it (its request limit Requests/10).
	Concurrency      int
	Requests         int
	Phase, Warmup    time.Duration
	GatewayArgs, Env []string
	// BaselineBin, when set, holds another build's smg: each cell then runs both gateways,
	// alternating phases, Rounds times (default 1), and reports the median round of each.
	BaselineBin  string
	Rounds       int
	StartTimeout time.Duration // per process start and for the workers becoming ready (default 120 s)
	Out          io.Writer
}

// ScaleResult is one (size, policy) cell.
type ScaleResult struct {
	Build   string // the binary directory of the gateway
	Workers int    // per leg
	Policy  string
	Summary Summary
	// Mem is the gateway's memory after the phase (its /metrics).
	Mem GatewayMem
}

var simLine = regexp.MustCompile(`listening on (http://\S+) bootstrap=`)

// RunScale runs every policy on every fleet size, sizes outermost (one pair of sim processes
// per size, one gateway per cell), and writes a table with each cell's gateway CPU per
// request relative to the smallest size's.
func RunScale(ctx context.Context, c ScaleConfig) ([]ScaleResult, error) {
	if c.BinDir == "" {
		c.BinDir = "bin"
	}
	if len(c.Sizes) == 0 {
		c.Sizes = []int{2, 64, 512}
	}
	if len(c.Policies) == 0 {
		c.Policies = []string{"round_robin", "power_of_two", "cache_aware"}
	}
	c.Concurrency = max(c.Concurrency, 1)
	if c.Requests <= 0 {
		c.Requests = 4000
	}
	if c.Phase <= 0 {
		c.Phase = 10 * time.Second
	}
	if c.Warmup <= 0 {
		c.Warmup = 2 * time.Second
	}
	if c.StartTimeout <= 0 {
		c.StartTimeout = 120 * time.Second
	}
	if c.Out == nil {
		c.Out = io.Discard
	}
	var out []ScaleResult
	for _, n := range c.Sizes {
		rs, err := runScaleSize(ctx, c, n)
		out = append(out, rs...)
		if err != nil {
			return out, err
		}
	}
	WriteScale(c.Out, out)
	return out, nil
}

func runScaleSize(ctx context.Context, c ScaleConfig, n int) ([]ScaleResult, error) {
	simBin := filepath.Join(c.BinDir, "smg-sim")
	var legs [2]*Process
	var urls [2][]string
	defer func() {
		for _, p := range legs {
			if p != nil {
				p.Stop(5 * time.Second)
			}
		}
	}()
	for i, role := range []string{sim.RolePrefill, sim.RoleDecode} {
		p, ms, err := startProcessN("vllm "+role, simBin, []string{"--engine", sim.EngineVLLM, "--role", role,
			"--host", "127.0.0.1", "--port", "0", "--kv-connector", sim.ConnectorNixl, "--instances", strconv.Itoa(n)},
			nil, simLine, n, c.StartTimeout)
		if err != nil {
			return nil, err
		}
		legs[i] = p
		for _, m := range ms {
			urls[i] = append(urls[i], m[1])
		}
	}
	var out []ScaleResult
	for _, pol := range c.Policies {
		rs, err := runScaleCell(ctx, c, pol, urls[0], urls[1])
		out = append(out, rs...)
		if err != nil {
			return out, fmt.Errorf("%d workers per leg, %s: %w", n, pol, err)
		}
		for _, r := range rs {
			first := ""
			if r.Summary.Errors > 0 {
				first = " (first: " + r.Summary.FirstError + ")"
			}
			fmt.Fprintf(c.Out, "%5d workers/leg  %-13s %-20s %8.0f µs gateway CPU/request  %7.0f req/s  %d errors%s\n",
				n, pol, r.Build, r.Summary.CPUPerRequest("gateway"), r.Summary.Throughput, r.Summary.Errors, first)
		}
	}
	return out, nil
}

// runScaleCell starts one gateway per build (this build, then BaselineBin's when set) with
// every worker registered, then alternates measured phases between them for Rounds rounds:
// builds compared within one run, under the same machine load. A cell's figure is the
// median round.
func runScaleCell(ctx context.Context, c ScaleConfig, pol string, prefills, decodes []string) ([]ScaleResult, error) {
	builds := []string{c.BinDir}
	if c.BaselineBin != "" {
		builds = append(builds, c.BaselineBin)
	}
	fleets := make([]*Fleet, len(builds))
	defer func() {
		for _, f := range fleets {
			if f != nil {
				f.Gateway.Stop(5 * time.Second)
			}
		}
	}()
	wl := Workload{Prompt: BenchPrompt, MaxTokens: OutputTokens}
	hc := NewClient(c.Concurrency)
	defer hc.CloseIdleConnections()
	for i, bin := range builds {
		f, err := startScaleGateway(ctx, c, bin, pol, prefills, decodes)
		if err != nil {
			return nil, err
		}
		fleets[i] = f
		if _, err := Run(ctx, NewGateway(f.GatewayURL, wl, hc), Options{Concurrency: c.Concurrency, Requests: max(c.Requests/10, 1), Duration: c.Warmup}); err != nil {
			return nil, err
		}
	}
	runs := make([][]Summary, len(builds))
	for range max(c.Rounds, 1) {
		for i, f := range fleets {
			probe := CPUProbe(map[string]int{"gateway": f.Gateway.PID()})
			before := probe()
			s, err := Run(ctx, NewGateway(f.GatewayURL, wl, hc), Options{Concurrency: c.Concurrency, Requests: c.Requests, Duration: c.Phase})
			s.CPU = cpuDelta(before, probe())
			if err != nil {
				return nil, err
			}
			if s.OK == 0 {
				return nil, fmt.Errorf("%s: no request succeeded: %s (gateway output: %s)", builds[i], s.FirstError, f.Gateway.Output())
			}
			runs[i] = append(runs[i], s)
		}
	}
	var out []ScaleResult
	for i, f := range fleets {
		mem, err := ReadGatewayMem(ctx, f.admin, f.GatewayURL)
		if err != nil {
			return out, err
		}
		rs := runs[i]
		sort.Slice(rs, func(a, b int) bool { return rs[a].CPUPerRequest("gateway") < rs[b].CPUPerRequest("gateway") })
		out = append(out, ScaleResult{Build: builds[i], Workers: len(prefills), Policy: pol, Summary: rs[len(rs)/2], Mem: mem})
	}
	return out, nil
}

// startScaleGateway starts bin's smg with pol and registers every worker; it returns when
// all are ready.
func startScaleGateway(ctx context.Context, c ScaleConfig, bin, pol string, prefills, decodes []string) (*Fleet, error) {
	args := append([]string{"launch", "--pd-disaggregation", "--host", "127.0.0.1", "--port", "0",
		"--prometheus-port", "0", "--policy", pol, "--log-json", "--shutdown-drain-delay-secs", "0"}, c.GatewayArgs...)
	gw, m, err := startProcess("gateway", filepath.Join(bin, "smg"), args, c.Env, gatewayReady, c.StartTimeout)
	if err != nil {
		return nil, err
	}
	f := &Fleet{Engine: sim.EngineVLLM, Gateway: gw, GatewayURL: "http://" + m[1], admin: &http.Client{Timeout: 10 * time.Second}}
	err = CheckLoopback(f.GatewayURL)
	if err == nil {
		err = f.registerAll(ctx, prefills, decodes)
	}
	if err == nil {
		err = f.waitReadyN(ctx, len(prefills)+len(decodes), c.StartTimeout)
	}
	if err != nil {
		gw.Stop(5 * time.Second)
		return nil, err
	}
	return f, nil
}

// registerAll POSTs every worker, 16 at a time.
func (f *Fleet) registerAll(ctx context.Context, prefills, decodes []string) error {
	type job struct{ url, typ string }
	jobs := make(chan job)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var errs []error
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range jobs {
				if err := f.register(ctx, j.url, j.typ); err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}
			}
		}()
	}
	for _, u := range prefills {
		jobs <- job{u, "prefill"}
	}
	for _, u := range decodes {
		jobs <- job{u, "decode"}
	}
	close(jobs)
	wg.Wait()
	return errors.Join(errs...)
}

// WriteScale writes the scale table: per policy, CPU per request at each size and its ratio
// to the smallest size.
func WriteScale(w io.Writer, rs []ScaleResult) {
	base := map[[2]string]float64{}
	fmt.Fprintf(w, "\n| build | workers per leg | policy | gateway CPU µs/request | × smallest fleet | throughput req/s | gateway RSS MiB | heap in use MiB | errors |\n|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range rs {
		cpu := r.Summary.CPUPerRequest("gateway")
		k := [2]string{r.Build, r.Policy}
		if _, ok := base[k]; !ok {
			base[k] = cpu
		}
		ratio := 0.0
		if base[k] > 0 {
			ratio = cpu / base[k]
		}
		fmt.Fprintf(w, "| %s | %d | %s | %.0f | %.2f | %.0f | %.0f | %.0f | %d |\n", r.Build, r.Workers, r.Policy, cpu, ratio,
			r.Summary.Throughput, float64(r.Mem.RSS)/(1<<20), float64(r.Mem.HeapInuse)/(1<<20), r.Summary.Errors)
	}
}
