package main

import (
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/smg-go/smg/test/fleetbench"
	"github.com/smg-go/smg/test/sim"
)

func newFleet() *cobra.Command {
	c := fleetbench.Config{BinDir: "bin", Engine: sim.EngineVLLM, Transport: fleetbench.TransportHTTP, Prefills: 4, Decodes: 4, Rate: 8, Requests: 200,
		Duration: 60 * time.Second, RequestTimeout: 120 * time.Second, Seed: 1, Shape: fleetbench.DefaultShape(), Sim: fleetbench.DefaultKnobs()}
	var (
		policies, replicas, workloads string
		selectivePD                   string
		variantList                   []string
		jsonPath, plotPath, from      string
		rebuild                       bool
		tc                            = fleetbench.TenantsConfig{DecodeWindow: 8, InteractiveRate: 2, InteractiveRequests: 60,
			InteractiveMaxTokens: 8, QueueWait: 30 * time.Second}
	)
	cmd := &cobra.Command{
		Use:   "fleet",
		Short: "Measure what routing does to a simulated fleet's TTFT, throughput, cache hits and balance",
		Long: `fleet runs every --policy × --replicas × --workload cell on a fresh loopback fleet: --prefills
prefill and --decodes decode smg-sim processes with a KV-cache model (HTTP vLLM NIXL by default,
--engine sglang for bootstrap rooms; --transport grpc for the engines' gRPC services) and N smg gateway replicas (N > 1 share a redis-server the
bench starts on a free loopback port). It sends open-loop Poisson arrivals at --rate of
streaming chat completions, spread round-robin over the replicas, at most --requests per cell
and none after --duration, and prints per cell: TTFT p50/p90/p99 (first content chunk), e2e
p50/p99, requests/s and output tokens/s, the prefill cache-hit rate (Σcached_tokens ÷
Σprompt_tokens from the prefills' own /sim/stats), load imbalance (max ÷ mean busy_ms per
role), errors and recomputes. --json writes the report, --plot an SVG of the TTFT CDFs;
--from re-reads a report (table and plot) without running anything.
Workloads: shared-prefix, multi-turn, agentic, unique, mixed (or all); --seed fixes them.
--selective-pd 0,256 runs each cell once per threshold (0 = always PD) in the same run.
--variant label=flags (repeatable) runs each cell once per gateway configuration in the same
run, e.g. --variant 'events=--kv-events-routing=true' --variant 'approx=--kv-events-routing=false'.
--workload two-tenants (alone) is the priority benchmark: a batch tenant (--rate, --requests,
--max-tokens) saturating decode admission windows of --decode-window, and an interactive
tenant (--interactive-rate, --interactive-requests, --interactive-max-tokens), keys from a
generated --tenants-file; modes unloaded, no-queue, equal-priority and priorities, each on a
fresh fleet; the first --policy routes.
See docs/fleet-bench.md.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if from != "" {
				rep, err := fleetbench.ReadJSON(from)
				if err != nil {
					return err
				}
				fleetbench.WriteTable(cmd.OutOrStdout(), rep.Cells)
				fleetbench.WriteSizeSplit(cmd.OutOrStdout(), rep.Cells)
				fleetbench.WriteReusable(cmd.OutOrStdout(), rep.Reusable)
				if plotPath == "" {
					return nil
				}
				return fleetbench.WritePlotFile(plotPath, rep.Cells)
			}
			var err error
			if c.Policies, err = fleetbench.ParsePolicies(policies); err != nil {
				return err
			}
			if c.Replicas, err = fleetbench.ParseReplicas(replicas); err != nil {
				return err
			}
			if c.SelectivePD, err = fleetbench.ParseSelectivePD(selectivePD); err != nil {
				return err
			}
			if c.Variants, err = fleetbench.ParseVariants(variantList); err != nil {
				return err
			}
			if workloads == fleetbench.TwoTenants {
				c.Workloads = nil
			} else if c.Workloads, err = fleetbench.ParseWorkloads(workloads); err != nil {
				return err
			}
			if c.Transport == fleetbench.TransportGRPC && c.TokenizerPath == "" {
				if c.TokenizerPath = fleetbench.FindTokenizer(); c.TokenizerPath == "" {
					return errors.New("--transport grpc: no tokenizer (run `make fixtures`, or give --tokenizer-path)")
				}
			}
			out, errOut := cmd.OutOrStdout(), cmd.ErrOrStderr()
			if err := fleetbench.EnsureBinaries(c.BinDir, rebuild, errOut); err != nil {
				return err
			}
			c.Log = errOut
			fmt.Fprintf(out, "smg-bench fleet: %s; %dP+%dD %s over %s; %g req/s, %d requests or %s per cell; seed %d\n",
				fleetbench.Machine(), c.Prefills, c.Decodes, c.Engine, c.Transport, c.Rate, c.Requests, c.Duration, c.Seed)
			start := time.Now()
			if workloads == fleetbench.TwoTenants {
				tc.Base = c
				cells, runErr := fleetbench.RunTenants(cmd.Context(), tc)
				fleetbench.WriteTenantsTable(out, cells)
				fmt.Fprintf(out, "fleet took %s\n", time.Since(start).Round(time.Second))
				return runErr
			}
			rep, runErr := fleetbench.Run(cmd.Context(), c)
			fleetbench.WriteTable(out, rep.Cells)
			fleetbench.WriteSizeSplit(out, rep.Cells)
			fleetbench.WriteReusable(out, rep.Reusable)
			var errs []error
			if jsonPath != "" && len(rep.Cells) > 0 {
				errs = append(errs, fleetbench.WriteJSON(jsonPath, rep))
				fmt.Fprintf(out, "json: %s\n", jsonPath)
			}
			if plotPath != "" && len(rep.Cells) > 0 {
				errs = append(errs, fleetbench.WritePlotFile(plotPath, rep.Cells))
				fmt.Fprintf(out, "plot: %s\n", plotPath)
			}
			fmt.Fprintf(out, "fleet took %s\n", time.Since(start).Round(time.Second))
			return errors.Join(append([]error{runErr}, errs...)...)
		},
	}
	f := cmd.Flags()
	f.StringVar(&c.BinDir, "bin", c.BinDir, "directory holding smg and smg-sim (built there with `go build` when missing)")
	f.BoolVar(&rebuild, "build", false, "rebuild smg and smg-sim into --bin first")
	f.StringVar(&c.Engine, "engine", c.Engine, `simulated engine over HTTP: "vllm" (NIXL kv_transfer_params) or "sglang" (bootstrap rooms)`)
	f.StringVar(&c.Transport, "transport", c.Transport, `"http" or "grpc" (the engines' gRPC services; the simulators serve --tokenizer-path to the gateway)`)
	f.StringVar(&c.TokenizerPath, "tokenizer-path", "", "gRPC: tokenizer directory the simulators serve (default: the Qwen3 fixture of `make fixtures`)")
	f.IntVar(&c.Prefills, "prefills", c.Prefills, "prefill simulators")
	f.IntVar(&c.Decodes, "decodes", c.Decodes, "decode simulators")
	f.StringVar(&policies, "policy", "cache_aware,round_robin", "comma list of gateway policies (see `smg launch --help`), or all")
	f.StringVar(&replicas, "replicas", "1,4", "comma list of gateway replica counts")
	f.StringVar(&selectivePD, "selective-pd", "", "comma list of --selective-pd-uncached-tokens values, one cell each, decodes registered kv_both (e.g. 0,256; empty: plain cells)")
	f.StringArrayVar(&variantList, "variant", nil, "label=flags: run each cell once more with these extra gateway flags (space-separated), in the same run (repeatable)")
	f.StringVar(&workloads, "workload", fleetbench.SharedPrefix, "comma list of shared-prefix, multi-turn, agentic, unique, mixed, or all; or two-tenants alone")
	f.Float64Var(&c.Rate, "rate", c.Rate, "Poisson arrival rate, requests per second")
	f.IntVar(&c.Requests, "requests", c.Requests, "requests per cell (at most)")
	f.DurationVar(&c.Duration, "duration", c.Duration, "no request of a cell is sent after this")
	f.DurationVar(&c.RequestTimeout, "request-timeout", c.RequestTimeout, "bound on each request")
	f.Uint64Var(&c.Seed, "seed", c.Seed, "seed of the workloads and arrival schedules")
	f.IntVar(&c.Shape.MaxTokens, "max-tokens", c.Shape.MaxTokens, "output tokens per request")
	f.Float64Var(&c.Shape.Scale, "scale", c.Shape.Scale, "multiplies the workloads' long lengths (prefixes, contexts, documents)")
	f.IntVar(&c.Sim.BlockSize, "block-size", c.Sim.BlockSize, "smg-sim --block-size, tokens per KV block (0: the simulator's default)")
	f.IntVar(&c.Sim.KVCacheBlocks, "kv-cache-blocks", c.Sim.KVCacheBlocks, "smg-sim --kv-cache-blocks, KV blocks per simulator (0: the simulator's default)")
	f.Float64Var(&c.Sim.PrefillTokensPerS, "prefill-tokens-per-s", c.Sim.PrefillTokensPerS, "smg-sim --prefill-tokens-per-s, uncached prompt tokens per second")
	f.Float64Var(&c.Sim.PrefillFixedMS, "prefill-fixed-ms", c.Sim.PrefillFixedMS, "smg-sim --prefill-fixed-ms, fixed cost of every prefill, milliseconds")
	f.Float64Var(&c.Sim.KVTransferMSPerBlock, "kv-transfer-ms-per-block", c.Sim.KVTransferMSPerBlock, "smg-sim --kv-transfer-ms-per-block on the decodes, milliseconds")
	f.Float64Var(&c.Sim.ITLms, "itl-ms", c.Sim.ITLms, "decode inter-token latency, milliseconds")
	f.Float64Var(&c.Sim.ITLPerRunningms, "itl-per-running-ms", c.Sim.ITLPerRunningms, "extra decode inter-token latency per running request, milliseconds")
	f.IntVar(&c.Sim.PrefillMaxRunning, "prefill-max-running", c.Sim.PrefillMaxRunning, "prefill --max-running (requests computing at once)")
	f.IntVar(&c.Sim.DecodeMaxRunning, "decode-max-running", c.Sim.DecodeMaxRunning, "decode --max-running (requests computing at once)")
	f.StringArrayVar(&c.GatewayArgs, "gateway-arg", nil, "extra `smg launch` flag for every gateway (repeatable)")
	f.StringArrayVar(&c.PrefillArgs, "prefill-arg", nil, "extra smg-sim flag for every prefill (repeatable)")
	f.StringArrayVar(&c.DecodeArgs, "decode-arg", nil, "extra smg-sim flag for every decode (repeatable)")
	f.IntVar(&tc.DecodeWindow, "decode-window", tc.DecodeWindow, "two-tenants: each decode's max_running_requests label (its admission window)")
	f.Float64Var(&tc.InteractiveRate, "interactive-rate", tc.InteractiveRate, "two-tenants: the interactive tenant's Poisson rate, requests per second")
	f.IntVar(&tc.InteractiveRequests, "interactive-requests", tc.InteractiveRequests, "two-tenants: the interactive tenant's requests (at most)")
	f.IntVar(&tc.InteractiveMaxTokens, "interactive-max-tokens", tc.InteractiveMaxTokens, "two-tenants: the interactive tenant's output tokens per request")
	f.DurationVar(&tc.QueueWait, "queue-wait", tc.QueueWait, "two-tenants: --flow-queue-wait-secs (and --pd-admission-wait-secs) of the gateways")
	f.StringVar(&from, "from", "", "run nothing: print the table of this --json report and draw its --plot")
	f.StringVar(&jsonPath, "json", "bin/fleet-bench.json", "write the report as JSON here (empty: no file)")
	f.StringVar(&plotPath, "plot", "bin/fleet-bench.svg", "write the TTFT CDF plot here: SVG, or PNG for a .png name (empty: no file)")
	return cmd
}
