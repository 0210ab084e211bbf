package load

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"github.com/smg-go/smg/test/sim"
)

// IdleMem is one gateway's memory with a registered, ready fleet and no traffic.
type IdleMem struct {
	Build   string // the binary directory of the gateway
	Workers int    // per leg
	Round   int
	Mem     GatewayMem
}

// RunScaleIdle measures, per fleet size in c.Sizes, the memory of a gateway (c.BinDir, and
// c.BaselineBin when set, alternating) that has every instance of one prefill and one decode
// smg-sim process registered and ready and serves no traffic: settle after the last worker
// turned ready, a garbage collection is forced through the gateway's profiler
// (/debug/pprof/heap?gc=1, saved to heapDir when not empty) and its /metrics are read. c.Rounds gateways per build and size (the first
// policy of c.Policies, round_robin by default); one gateway runs at a time.
func RunScaleIdle(ctx context.Context, c ScaleConfig, settle time.Duration, heapDir string) ([]IdleMem, error) {
	if c.BinDir == "" {
		c.BinDir = "bin"
	}
	if len(c.Sizes) == 0 {
		c.Sizes = []int{2, 512}
	}
	if len(c.Policies) == 0 {
		c.Policies = []string{"round_robin"}
	}
	if c.StartTimeout <= 0 {
		c.StartTimeout = 120 * time.Second
	}
	if c.Out == nil {
		c.Out = io.Discard
	}
	builds := []string{c.BinDir}
	if c.BaselineBin != "" {
		builds = append(builds, c.BaselineBin)
	}
	var out []IdleMem
	for _, n := range c.Sizes {
		rs, err := runIdleSize(ctx, c, builds, n, settle, heapDir)
		out = append(out, rs...)
		if err != nil {
			return out, fmt.Errorf("%d workers per leg: %w", n, err)
		}
	}
	WriteScaleIdle(c.Out, out)
	return out, nil
}

func runIdleSize(ctx context.Context, c ScaleConfig, builds []string, n int, settle time.Duration, heapDir string) ([]IdleMem, error) {
	var urls [2][]string
	for i, role := range []string{sim.RolePrefill, sim.RoleDecode} {
		p, ms, err := startProcessN("vllm "+role, filepath.Join(c.BinDir, "smg-sim"), []string{"--engine", sim.EngineVLLM,
			"--role", role, "--host", "127.0.0.1", "--port", "0", "--kv-connector", sim.ConnectorNixl,
			"--instances", strconv.Itoa(n)}, nil, simLine, n, c.StartTimeout)
		if err != nil {
			return nil, err
		}
		defer p.Stop(5 * time.Second)
		for _, m := range ms {
			urls[i] = append(urls[i], m[1])
		}
	}
	var out []IdleMem
	for round := range max(c.Rounds, 1) {
		for _, bin := range builds {
			pprof, err := freeLoopbackAddr()
			if err != nil {
				return out, err
			}
			gc := c
			gc.GatewayArgs = append(slices.Clone(c.GatewayArgs), "--pprof-addr="+pprof)
			f, err := startScaleGateway(ctx, gc, bin, c.Policies[0], urls[0], urls[1])
			if err != nil {
				return out, err
			}
			select {
			case <-time.After(settle):
			case <-ctx.Done():
			}
			name := ""
			if heapDir != "" {
				name = filepath.Join(heapDir, fmt.Sprintf("heap-%s-%d-%d.pb.gz", buildName(bin), n, round+1))
			}
			err = collectHeap(ctx, f.admin, "http://"+pprof, name)
			var mem GatewayMem
			if err == nil {
				mem, err = ReadGatewayMem(ctx, f.admin, f.GatewayURL)
			}
			f.Gateway.Stop(5 * time.Second)
			if err != nil {
				return out, err
			}
			r := IdleMem{Build: bin, Workers: n, Round: round + 1, Mem: mem}
			fmt.Fprintf(c.Out, "%5d workers/leg  %-20s round %d  RSS %6.1f MiB  heap in use %6.1f MiB  stacks %5.2f MiB  %5d goroutines\n",
				n, bin, r.Round, mib(mem.RSS), mib(mem.HeapInuse), mib(mem.StackInuse), mem.Goroutines)
			out = append(out, r)
		}
	}
	return out, nil
}

// WriteScaleIdle writes rs as a Markdown table.
func WriteScaleIdle(w io.Writer, rs []IdleMem) {
	fmt.Fprintf(w, "\n| build | workers per leg | round | RSS MiB | heap in use MiB | stacks MiB | goroutines |\n|---|---|---|---|---|---|---|\n")
	for _, r := range rs {
		fmt.Fprintf(w, "| %s | %d | %d | %.1f | %.1f | %.2f | %d |\n", r.Build, r.Workers, r.Round,
			mib(r.Mem.RSS), mib(r.Mem.HeapInuse), mib(r.Mem.StackInuse), r.Mem.Goroutines)
	}
}

func mib(b int64) float64 { return float64(b) / (1 << 20) }

// buildName names a binary directory by its parent (/tmp/old/bin: "old").
func buildName(bin string) string {
	if abs, err := filepath.Abs(bin); err == nil {
		bin = abs
	}
	return filepath.Base(filepath.Dir(bin))
}

// freeLoopbackAddr returns a 127.0.0.1 address with a port free at the time of the call.
func freeLoopbackAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// collectHeap fetches base/debug/pprof/heap?gc=1 (the profiler collects garbage first) and
// saves it to file when file is not empty.
func collectHeap(ctx context.Context, hc *http.Client, base, file string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/debug/pprof/heap?gc=1", nil)
	if err != nil {
		return err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return fmt.Errorf("gateway heap profile: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("gateway heap profile: HTTP %d", resp.StatusCode)
	}
	if file == "" {
		_, err = io.Copy(io.Discard, resp.Body)
		return err
	}
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	return os.WriteFile(file, b, 0o644)
}
