package main

import (
	"fmt"
	"runtime"
	"time"

	"github.com/spf13/cobra"

	"github.com/smg-go/smg/test/load"
)

func newScale() *cobra.Command {
	c := load.ScaleConfig{BinDir: "bin", Concurrency: 32, Requests: 4000, Phase: 8 * time.Second, Warmup: 2 * time.Second}
	var idle bool
	var settle time.Duration
	var heapDir string
	cmd := &cobra.Command{
		Use:   "scale",
		Short: "Gateway CPU per request as the registered fleet grows (2, 64, 512 workers per leg)",
		Long: `scale starts, per fleet size, one vLLM NIXL prefill and one decode smg-sim process with
--instances N (zero latency) on 127.0.0.1, then per policy one smg gateway with every
instance registered through POST /workers, and measures the gateway's CPU time per request
under a closed loop (bounded by --requests and --phase). The table gives each size's figure
relative to the smallest size of the same policy (target: within 1.15x at 512).

With --idle it sends no traffic: per size and build (--rounds gateways each, one at a time)
it registers the fleet, waits --settle after every worker is ready, forces a garbage
collection through the gateway's profiler (--pprof-addr on a free loopback port) and reads
its RSS, heap in use, stacks and goroutines from /metrics (memory per registered worker).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			out := cmd.OutOrStdout()
			c.Out = out
			fmt.Fprintf(out, "smg-bench scale: %d CPUs, %s; sizes %v per leg, policies %v, c=%d, phases of %s or %d requests\n",
				runtime.NumCPU(), runtime.Version(), c.Sizes, c.Policies, c.Concurrency, c.Phase, c.Requests)
			if idle {
				_, err := load.RunScaleIdle(cmd.Context(), c, settle, heapDir)
				return err
			}
			_, err := load.RunScale(cmd.Context(), c)
			return err
		},
	}
	f := cmd.Flags()
	f.StringVar(&c.BinDir, "bin", c.BinDir, "directory with the smg and smg-sim binaries")
	f.IntSliceVar(&c.Sizes, "sizes", []int{2, 64, 512}, "workers per leg, one fleet each")
	f.StringSliceVar(&c.Policies, "policy", []string{"round_robin", "power_of_two", "cache_aware"}, "gateway --policy values")
	f.IntVar(&c.Concurrency, "concurrency", c.Concurrency, "requests in flight")
	f.IntVar(&c.Requests, "requests", c.Requests, "most requests of one measured phase")
	f.DurationVar(&c.Phase, "phase", c.Phase, "most time of one measured phase")
	f.DurationVar(&c.Warmup, "warmup", c.Warmup, "unrecorded warm-up per cell (request limit: --requests/10)")
	f.StringVar(&c.BaselineBin, "baseline-bin", "", "directory with another build's smg: every cell alternates phases between both gateways")
	f.IntVar(&c.Rounds, "rounds", 1, "measured phases per gateway per cell (the median is reported)")
	f.StringArrayVar(&c.GatewayArgs, "gateway-arg", nil, "extra smg launch flag for every gateway (repeatable)")
	f.BoolVar(&idle, "idle", false, "no traffic: read the gateway's memory with the fleet registered and ready")
	f.DurationVar(&settle, "settle", 10*time.Second, "with --idle: wait after the fleet is ready before reading")
	f.StringVar(&heapDir, "heap-dir", "", "with --idle: save each gateway's heap profile (taken after a forced collection) here")
	return cmd
}
