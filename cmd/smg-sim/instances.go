package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"syscall"

	"github.com/smg-go/smg/test/sim"
	"github.com/smg-go/smg/test/sim/grpcsim"
)

// maxInstances bounds --instances: beyond it one process runs out of descriptors or ports.
const maxInstances = 8192

// checkInstances validates --instances n against the flags that name one fixed resource.
func checkInstances(n int, kvEvents string) error {
	switch {
	case n < 1 || n > maxInstances:
		return fmt.Errorf("--instances %d: want 1 to %d", n, maxInstances)
	case n > 1 && kvEvents != "":
		return fmt.Errorf("--instances %d: --kv-events-config names fixed ZMQ endpoints; run one instance per process for KV events", n)
	}
	return nil
}

// nth returns port+i for a fixed port, 0 (pick a free one) for 0.
func nth(port, i int) int {
	if port == 0 {
		return 0
	}
	return port + i
}

// nthID is the engine id of instance i of n: id itself for one instance, "id-i" otherwise
// (each simulated worker has its own KV engine); "" (a random UUID each) stays "".
func nthID(id string, i, n int) string {
	if n == 1 || id == "" {
		return id
	}
	return id + "-" + strconv.Itoa(i)
}

// instanceConfigs are the configs of n independent HTTP instances: instance i listens on
// --port+i (and --bootstrap-port+i, MoRI-IO ports +i) when those are fixed, else on free
// ports. Several instances share one side-channel transport (Config.SideChannel).
func instanceConfigs(c sim.Config, n int) []sim.Config {
	out := make([]sim.Config, n)
	if n > 1 && c.SideChannel == nil {
		c.SideChannel = sim.NewSideChannelTransport() // one idle pool for the process
	}
	for i := range n {
		ci := c
		ci.Faults = append([]string(nil), c.Faults...)
		ci.Port, ci.BootstrapPort = nth(c.Port, i), nth(c.BootstrapPort, i)
		ci.MoRIIOHandshakePort, ci.MoRIIONotifyPort = nth(c.MoRIIOHandshakePort, i), nth(c.MoRIIONotifyPort, i)
		ci.EngineID = nthID(c.EngineID, i, n)
		out[i] = ci
	}
	return out
}

// grpcInstanceConfigs is instanceConfigs for gRPC instances (--stats-port+i too).
func grpcInstanceConfigs(c grpcsim.Config, n int) []grpcsim.Config {
	out := make([]grpcsim.Config, n)
	if n > 1 && c.SideChannel == nil {
		c.SideChannel = grpcsim.NewSideChannelTransport() // one idle pool for the process
	}
	for i := range n {
		ci := c
		ci.Faults = append([]string(nil), c.Faults...)
		ci.Port, ci.BootstrapPort, ci.StatsPort = nth(c.Port, i), nth(c.BootstrapPort, i), nth(c.StatsPort, i)
		ci.EngineID = nthID(c.EngineID, i, n)
		out[i] = ci
	}
	return out
}

// closer is a started instance.
type closer interface{ Close() error }

// serveAll starts every instance with start, which returns it and its ready line, writes
// one line per instance in order, and serves until parent ends or SIGINT/SIGTERM arrives;
// then it closes them all. A start failure closes the ones already started.
func serveAll(parent context.Context, n int, start func(i int) (closer, string, error), w io.Writer) error {
	if parent == nil {
		parent = context.Background()
	}
	ctx, stop := signal.NotifyContext(parent, os.Interrupt, syscall.SIGTERM)
	defer stop()
	srvs := make([]closer, 0, n)
	closeAll := func() error {
		var errs []error
		for _, s := range srvs {
			errs = append(errs, s.Close())
		}
		return errors.Join(errs...)
	}
	for i := range n {
		s, line, err := start(i)
		if err != nil {
			_ = closeAll()
			if n > 1 {
				return fmt.Errorf("instance %d: %w", i, err)
			}
			return err
		}
		srvs = append(srvs, s)
		fmt.Fprintln(w, line)
	}
	<-ctx.Done()
	return closeAll()
}
