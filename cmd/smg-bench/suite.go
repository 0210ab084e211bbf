package main

import (
	"fmt"
	"os"
	"regexp"
	"runtime"
	"time"

	"github.com/spf13/cobra"

	"github.com/smg-go/smg/test/load"
)

func newSuite() *cobra.Command {
	c := load.SuiteConfig{BinDir: "bin", Pairs: 5, Phase: 1500 * time.Millisecond, RealisticPhase: 2 * time.Second,
		Warmup: 300 * time.Millisecond, PhaseRequests: 20000, Streams: -1, StreamsTimeout: 120 * time.Second}
	var only, allocsFile string
	cmd := &cobra.Command{
		Use:   "suite",
		Short: "Run every scenario of `make bench` and judge the issue #10 targets",
		Long: `suite starts, per engine (SGLang, vLLM NIXL) and latency model (zero, realistic: prefill
20 ms, 5 ms per output token, 16 tokens), one prefill and one decode smg-sim and one smg
gateway on 127.0.0.1, and compares gateway and direct modes at concurrency 4 and 32,
non-streaming and streaming. Then it holds open SSE streams through one gateway and reports
its memory per stream. It ends with the targets table.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if only != "" {
				re, err := regexp.Compile(only)
				if err != nil {
					return fmt.Errorf("--only: %w", err)
				}
				c.Only = re
			}
			out := cmd.OutOrStdout()
			c.Out = out
			fmt.Fprintf(out, "smg-bench suite: %s/%s, %d CPUs (GOMAXPROCS %d), %s; %d pairs, phases of %s (realistic %s) or %d requests\n",
				runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), runtime.GOMAXPROCS(0), runtime.Version(),
				c.Pairs, c.Phase, c.RealisticPhase, c.PhaseRequests)
			start := time.Now()
			var allocs map[string]load.AllocFigure
			if allocsFile != "" {
				f, err := os.Open(allocsFile)
				if err != nil {
					return fmt.Errorf("--allocs: %w", err)
				}
				allocs, err = load.ParseDispatchAllocs(f)
				_ = f.Close()
				if err != nil {
					return fmt.Errorf("--allocs: %w", err)
				}
			}
			res, err := load.RunSuite(cmd.Context(), c)
			load.WriteTargets(out, load.EvaluateTargets(res))
			load.WriteOverview(out, res, allocs)
			fmt.Fprintf(out, "\nsuite took %s\n", time.Since(start).Round(time.Second))
			return err
		},
	}
	f := cmd.Flags()
	f.StringVar(&c.BinDir, "bin", c.BinDir, "directory holding the smg and smg-sim binaries")
	f.IntVar(&c.Pairs, "pairs", c.Pairs, "A/B rounds per scenario")
	f.DurationVar(&c.Phase, "phase", c.Phase, "time limit of one zero-latency phase")
	f.DurationVar(&c.RealisticPhase, "realistic-phase", c.RealisticPhase, "time limit of one realistic-latency phase")
	f.DurationVar(&c.Warmup, "warmup", c.Warmup, "unrecorded warm-up per mode and scenario (time limit)")
	f.IntVar(&c.PhaseRequests, "phase-requests", c.PhaseRequests, "request limit of one phase")
	f.StringVar(&allocsFile, "allocs", "", "`go test -bench Dispatch -benchmem ./app/dispatch` output whose allocations per request the overview shows beside each scenario")
	f.StringVar(&only, "only", "", "run only the scenarios whose name matches this regular expression")
	f.IntVar(&c.Streams, "streams", c.Streams, "open SSE streams to hold (0 skips; -1: 10000 capped by the gateway's open-file limit)")
	f.DurationVar(&c.StreamsTimeout, "streams-timeout", c.StreamsTimeout, "time limit of the open-streams run")
	f.StringArrayVar(&c.GatewayArgs, "gateway-arg", nil, "extra `smg launch` flag for every gateway (repeatable)")
	f.StringArrayVar(&c.GatewayEnv, "gateway-env", nil, "extra NAME=VALUE environment for every gateway, e.g. GOGC=400 (repeatable)")
	return cmd
}
