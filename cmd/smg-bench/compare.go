package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/smg-go/smg/test/load"
	"github.com/smg-go/smg/test/sim"
)

func newCompare() *cobra.Command {
	var (
		s                       load.Scenario
		bin, gateway            string
		prefill, decode         string
		bootstrapPort           int
		opts                    load.CompareOptions
		warmup                  time.Duration
		gatewayArgs, gatewayEnv []string
		maxTokens               int
		gatewayOnly, directOnly bool
	)
	s.Engine = sim.EngineSGLang
	opts.Pairs = 5
	opts.Phase = load.Options{Concurrency: 4, Requests: 20000, Duration: 2 * time.Second}
	cmd := &cobra.Command{
		Use:   "compare",
		Short: "Compare gateway and direct modes for one scenario",
		Long: `compare runs one scenario in alternating gateway/direct phases. Without --gateway it starts
its own fleet (one prefill and one decode smg-sim and an smg gateway, from --bin); with
--gateway, --prefill and --decode (and --bootstrap-port for SGLang) it uses yours.
--gateway-arg passes extra flags to a gateway it starts, e.g. --gateway-arg=--pprof-addr=127.0.0.1:6060.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, out := cmd.Context(), cmd.OutOrStdout()
			s.Concurrency = opts.Phase.Concurrency
			wl := s.Workload()
			wl.MaxTokens = maxTokens
			var gwURL string
			var direct load.Target
			var f *load.Fleet
			dc := load.NewClient(opts.Phase.Concurrency)
			if gateway == "" {
				pa, da := load.RealisticSimArgs(s.Realistic)
				var err error
				f, err = load.StartFleet(ctx, load.FleetConfig{BinDir: bin, Engine: s.Engine, PrefillArgs: pa,
					DecodeArgs: da, GatewayArgs: gatewayArgs, GatewayEnv: gatewayEnv})
				if err != nil {
					return err
				}
				defer f.Close()
				fmt.Fprintf(out, "fleet: gateway %s (pid %d), prefill %s, decode %s\n", f.GatewayURL, f.Gateway.PID(), f.Prefill.URL, f.Decode.URL)
				gwURL = f.GatewayURL
				if direct, err = f.Direct(wl, dc); err != nil {
					return err
				}
			} else {
				for _, u := range []string{gateway, prefill, decode} {
					if err := load.CheckLoopback(u); err != nil {
						return err
					}
				}
				gwURL = strings.TrimRight(gateway, "/")
				var err error
				if s.Engine == sim.EngineSGLang {
					direct, err = load.NewDirectSGLang(prefill, "127.0.0.1", bootstrapPort, decode, wl, dc)
				} else {
					direct, err = load.NewDirectNIXL(prefill, decode, wl, dc)
				}
				if err != nil {
					return err
				}
			}
			gw := load.NewGateway(gwURL, wl, load.NewClient(opts.Phase.Concurrency))
			opts.Warmup = opts.Phase
			opts.Warmup.Duration, opts.Warmup.Requests = warmup, max(opts.Phase.Requests/10, 1)
			if gatewayOnly || directOnly {
				t := load.Target(gw)
				if directOnly {
					t = direct
				}
				sum, err := load.Run(ctx, t, opts.Phase)
				load.WriteSummary(out, s.Name()+" ("+t.Name()+" only)", s.Stream, sum)
				if err == nil && sum.Errors > 0 {
					err = fmt.Errorf("%d requests failed: %s", sum.Errors, sum.FirstError)
				}
				return err
			}
			if f != nil {
				opts.Probe = f.Probe()
			}
			c, err := load.Compare(ctx, s.Name(), s.Stream, gw, direct, opts)
			load.WriteComparison(out, c)
			return err
		},
	}
	f := cmd.Flags()
	f.StringVar(&s.Engine, "engine", s.Engine, `"sglang" (bootstrap rooms) or "vllm" (NIXL)`)
	f.BoolVar(&s.Realistic, "realistic", false, "give a started fleet the realistic latency model (prefill 20 ms, 5 ms/token)")
	f.BoolVar(&s.Stream, "stream", false, "stream the responses (SSE)")
	f.IntVar(&maxTokens, "max-tokens", load.OutputTokens, "output tokens per request")
	f.IntVar(&opts.Phase.Concurrency, "concurrency", opts.Phase.Concurrency, "requests in flight (with --rate: the cap)")
	f.Float64Var(&opts.Phase.Rate, "rate", 0, "open-loop requests per second (0: closed loop at --concurrency)")
	f.IntVar(&opts.Phase.Requests, "requests", opts.Phase.Requests, "request limit of one phase")
	f.DurationVar(&opts.Phase.Duration, "duration", opts.Phase.Duration, "time limit of one phase")
	f.IntVar(&opts.Pairs, "pairs", opts.Pairs, "A/B rounds")
	f.DurationVar(&warmup, "warmup", 300*time.Millisecond, "unrecorded warm-up per mode (time limit)")
	f.BoolVar(&gatewayOnly, "gateway-only", false, "run one gateway phase only (for profiling)")
	f.BoolVar(&directOnly, "direct-only", false, "run one direct phase only")
	f.StringVar(&bin, "bin", "bin", "directory holding smg and smg-sim (when starting a fleet)")
	f.StringArrayVar(&gatewayArgs, "gateway-arg", nil, "extra `smg launch` flag for the gateway it starts (repeatable)")
	f.StringArrayVar(&gatewayEnv, "gateway-env", nil, "extra NAME=VALUE environment for the gateway it starts, e.g. GOGC=400 (repeatable)")
	f.StringVar(&gateway, "gateway", "", "gateway base URL of an existing fleet (loopback)")
	f.StringVar(&prefill, "prefill", "", "prefill worker URL of an existing fleet")
	f.StringVar(&decode, "decode", "", "decode worker URL of an existing fleet")
	f.IntVar(&bootstrapPort, "bootstrap-port", 0, "SGLang prefill bootstrap port of an existing fleet")
	return cmd
}
