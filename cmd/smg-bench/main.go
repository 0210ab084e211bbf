// Command smg-bench measures the gateway's overhead against a direct client that performs
// the same PD handoff itself (issue #10). See package github.com/smg-go/smg/test/load and
// docs/benchmarks.md.
//
//	smg-bench suite     # every scenario of `make bench`, the targets table at the end
//	smg-bench compare   # one scenario, against a fleet it starts or one you started
//	smg-bench streams   # hold N open SSE streams through a gateway, memory per stream
//	smg-bench fleet     # routing policies on a simulated fleet: TTFT, throughput, cache hits (docs/fleet-bench.md)
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := newRoot().ExecuteContext(ctx)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "smg-bench:", err)
		os.Exit(1)
	}
}

func newRoot() *cobra.Command {
	root := &cobra.Command{
		Use:   "smg-bench",
		Short: "Bounded loopback load generator: smg gateway vs a direct PD client, side by side",
		Long: `smg-bench sends PD requests through the smg gateway and through a direct client that
performs the SGLang (bootstrap room) or vLLM NIXL (kv_transfer_params) handoff itself, against
the same smg-sim engines, alternating the two modes (A B A B ...). It prints throughput,
p50/p90/p99 latency, streaming TTFT and inter-chunk gaps per phase, the gateway/direct ratio
per pair and the median ratio. Every phase is bounded by a request count and a time limit;
only loopback targets are accepted.`,
		SilenceUsage:      true,
		SilenceErrors:     true,
		CompletionOptions: cobra.CompletionOptions{DisableDefaultCmd: true},
	}
	root.AddCommand(newSuite(), newCompare(), newStreams(), newFleet(), newScale())
	return root
}
