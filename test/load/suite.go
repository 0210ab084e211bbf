package load

import (
	"context"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"
	"time"

	"github.com/smg-go/smg/test/sim"
)

// Scenario is one gateway-vs-direct comparison of the suite.
type Scenario struct {
	// Engine is sim.EngineSGLang (bootstrap rooms) or sim.EngineVLLM (NIXL).
	Engine string
	// Realistic gives the sims a latency model: prefill RealisticPrefill for the prompt,
	// decode RealisticITL per output token; otherwise they answer at once.
	Realistic bool
	Stream    bool
	// Concurrency is the closed-loop concurrency.
	Concurrency int
}

// The realistic latency model (issue #10): prefill 20 ms, 5 ms per output token, 16 tokens.
const (
	RealisticPrefill = 20 * time.Millisecond
	RealisticITL     = 5 * time.Millisecond
	OutputTokens     = 16
)

// BenchPrompt is the prompt every scenario sends: 16 words, so 16 prompt tokens for the
// simulator.
const BenchPrompt = "the gateway must cost almost nothing compared with a client performing the same two leg handoff"

// Name is e.g. "sglang zero-latency streaming c=4".
func (s Scenario) Name() string {
	lat, mode := "zero-latency", "non-streaming"
	if s.Realistic {
		lat = "realistic-latency"
	}
	if s.Stream {
		mode = "streaming"
	}
	eng := s.Engine
	if eng == sim.EngineVLLM {
		eng = "vllm-nixl"
	}
	return fmt.Sprintf("%s %s %s c=%d", eng, lat, mode, s.Concurrency)
}

// Workload is the request the scenario sends.
func (s Scenario) Workload() Workload {
	return Workload{Prompt: BenchPrompt, MaxTokens: OutputTokens, Stream: s.Stream}
}

// DefaultScenarios: for SGLang and vLLM NIXL, zero-latency sims at concurrency 4 and 32,
// non-streaming and streaming, then realistic latency at concurrency 32, both ways.
func DefaultScenarios() []Scenario {
	var out []Scenario
	for _, realistic := range []bool{false, true} {
		for _, eng := range []string{sim.EngineSGLang, sim.EngineVLLM} {
			concs := []int{4, 32}
			if realistic {
				concs = []int{32}
			}
			for _, stream := range []bool{false, true} {
				for _, c := range concs {
					out = append(out, Scenario{Engine: eng, Realistic: realistic, Stream: stream, Concurrency: c})
				}
			}
		}
	}
	return out
}

// SuiteConfig bounds the whole suite.
type SuiteConfig struct {
	// BinDir holds smg and smg-sim.
	BinDir string
	// Pairs is the number of A/B rounds per scenario.
	Pairs int
	// Phase and RealisticPhase are the time limit of one measured phase (zero-latency and
	// realistic scenarios); PhaseRequests its request limit; Warmup the unrecorded warm-up
	// per mode (time limit; its request limit is PhaseRequests/10).
	Phase, RealisticPhase, Warmup time.Duration
	PhaseRequests                 int
	// Scenarios to run (DefaultScenarios when nil); Only, when set, keeps those whose Name
	// matches.
	Scenarios []Scenario
	Only      *regexp.Regexp
	// Streams is the number of SSE streams of the open-streams run: 0 skips it, < 0 means
	// 10,000 capped by the gateway's open-file limit (2 descriptors per stream).
	Streams        int
	StreamsTimeout time.Duration
	// StreamsHold is how long every stream stays open before the memory is read (default
	// 3 s; longer to take a heap profile meanwhile).
	StreamsHold time.Duration
	// GatewayArgs are extra `smg launch` flags for every gateway (e.g. --pprof-addr);
	// GatewayEnv extra environment (e.g. GOGC=400).
	GatewayArgs, GatewayEnv []string
	// Out receives the report as it goes.
	Out io.Writer
}

// ScenarioResult is one scenario's comparison and the simulators' handoff check.
type ScenarioResult struct {
	Scenario   Scenario
	Comparison Comparison
}

// SuiteResult is everything the suite measured.
type SuiteResult struct {
	Scenarios []ScenarioResult
	// Streams is the open-streams run, nil when skipped; StreamsLimit the gateway's
	// open-file limit it was sized against.
	Streams      *HoldResult
	StreamsLimit int
}

type fleetKey struct {
	engine    string
	realistic bool
}

// RunSuite runs the scenarios, one fleet per engine and latency model, and the open-streams
// run. After each fleet it checks on the simulators that every decode request received its
// KV through a handoff (no recompute, no unmatched room, no error): a benchmark of broken
// handoffs would measure nothing.
func RunSuite(ctx context.Context, c SuiteConfig) (SuiteResult, error) {
	var res SuiteResult
	if c.Scenarios == nil {
		c.Scenarios = DefaultScenarios()
	}
	if c.Out == nil {
		c.Out = io.Discard
	}
	groups := map[fleetKey][]Scenario{}
	var order []fleetKey
	for _, s := range c.Scenarios {
		if c.Only != nil && !c.Only.MatchString(s.Name()) {
			continue
		}
		k := fleetKey{s.Engine, s.Realistic}
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], s)
	}
	for _, k := range order {
		rs, err := runFleet(ctx, c, k, groups[k])
		res.Scenarios = append(res.Scenarios, rs...)
		if err != nil {
			return res, err
		}
	}
	if c.Streams != 0 {
		h, limit, err := runStreams(ctx, c)
		res.Streams, res.StreamsLimit = h, limit
		if err != nil {
			return res, err
		}
	}
	return res, nil
}

// RealisticSimArgs returns the smg-sim flags of the realistic latency model for the prefill and
// the decode (none when realistic is false): prefill RealisticPrefill for BenchPrompt,
// RealisticITL per output token.
func RealisticSimArgs(realistic bool) (prefill, decode []string) {
	if !realistic {
		return nil, nil
	}
	words := len(strings.Fields(BenchPrompt))
	tps := float64(words) / RealisticPrefill.Seconds()
	return []string{"--prefill-tokens-per-s", fmt.Sprint(tps)},
		[]string{"--itl-ms", fmt.Sprint(float64(RealisticITL) / float64(time.Millisecond))}
}

func runFleet(ctx context.Context, c SuiteConfig, k fleetKey, scenarios []Scenario) ([]ScenarioResult, error) {
	pa, da := RealisticSimArgs(k.realistic)
	f, err := StartFleet(ctx, FleetConfig{BinDir: c.BinDir, Engine: k.engine, PrefillArgs: pa, DecodeArgs: da,
		GatewayArgs: c.GatewayArgs, GatewayEnv: c.GatewayEnv})
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []ScenarioResult
	for _, s := range scenarios {
		phase := c.Phase
		if s.Realistic {
			phase = c.RealisticPhase
		}
		wl := s.Workload()
		gwc, dc := NewClient(s.Concurrency), NewClient(s.Concurrency)
		direct, err := f.Direct(wl, dc)
		if err != nil {
			return out, err
		}
		opts := CompareOptions{
			Phase:  Options{Concurrency: s.Concurrency, Requests: c.PhaseRequests, Duration: phase},
			Warmup: Options{Concurrency: s.Concurrency, Requests: max(c.PhaseRequests/10, 1), Duration: c.Warmup},
			Pairs:  c.Pairs,
			Probe:  f.Probe(),
		}
		cmp, err := Compare(ctx, s.Name(), s.Stream, NewGateway(f.GatewayURL, wl, gwc), direct, opts)
		gwc.CloseIdleConnections()
		dc.CloseIdleConnections()
		if err != nil {
			return out, fmt.Errorf("%s: %w (gateway output: %s)", s.Name(), err, f.Gateway.Output())
		}
		WriteComparison(c.Out, cmp)
		out = append(out, ScenarioResult{Scenario: s, Comparison: cmp})
	}
	ps, ds, err := f.Stats(ctx)
	if err != nil {
		return out, err
	}
	if err := checkHandoffs(ps, ds); err != nil {
		return out, fmt.Errorf("%s fleet: %w", k.engine, err)
	}
	fmt.Fprintf(c.Out, "\n%s fleet check: %d decode requests, every one received its KV through a handoff (prefill sent %d); 0 recomputed, 0 unmatched, 0 errors\n",
		k.engine, ds.Requests, ps.HandoffsSent)
	return out, nil
}

// checkHandoffs verifies that every decode request was served from a real handoff.
func checkHandoffs(p, d sim.Stats) error {
	var errs []error
	if d.HandoffsReceived != d.Requests {
		errs = append(errs, fmt.Errorf("decode received %d handoffs for %d requests", d.HandoffsReceived, d.Requests))
	}
	if p.HandoffsSent != d.HandoffsReceived {
		errs = append(errs, fmt.Errorf("prefill sent %d handoffs, decode received %d", p.HandoffsSent, d.HandoffsReceived))
	}
	if d.RecomputedPrompts != 0 || p.UnmatchedRooms+d.UnmatchedRooms != 0 || p.DuplicateRooms != 0 || p.Errors+d.Errors != 0 {
		errs = append(errs, fmt.Errorf("recomputed %d, unmatched %d, duplicate rooms %d, errors %d",
			d.RecomputedPrompts, p.UnmatchedRooms+d.UnmatchedRooms, p.DuplicateRooms, p.Errors+d.Errors))
	}
	return errors.Join(errs...)
}
