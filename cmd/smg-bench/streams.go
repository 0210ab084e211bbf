package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/smg-go/smg/test/load"
)

func newStreams() *cobra.Command {
	c := load.SuiteConfig{BinDir: "bin", Streams: -1, StreamsTimeout: 120 * time.Second}
	cmd := &cobra.Command{
		Use:   "streams",
		Short: "Hold N concurrent open SSE streams through one gateway and report its memory per stream",
		Long: `streams starts a SGLang fleet whose decode emits one token per second (no batching limit),
opens --n streams through the gateway (200 at a time), holds them all for 3 s, reads the
gateway's RSS, heap, stacks and goroutines from its /metrics, closes them and reads again.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c.Out = cmd.OutOrStdout()
			c.Scenarios = []load.Scenario{}
			res, err := load.RunSuite(cmd.Context(), c)
			if res.Streams != nil {
				ts := load.EvaluateTargets(res)
				load.WriteTargets(c.Out, ts[len(ts)-1:])
			}
			if err != nil {
				return fmt.Errorf("streams: %w", err)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&c.BinDir, "bin", c.BinDir, "directory holding the smg and smg-sim binaries")
	f.IntVar(&c.Streams, "n", c.Streams, "streams to open (-1: 10000 capped by the gateway's open-file limit)")
	f.DurationVar(&c.StreamsTimeout, "timeout", c.StreamsTimeout, "time limit for opening the streams")
	f.DurationVar(&c.StreamsHold, "hold", 3*time.Second, "how long every stream stays open before the memory is read")
	f.StringArrayVar(&c.GatewayArgs, "gateway-arg", nil, "extra `smg launch` flag for the gateway (repeatable)")
	return cmd
}
