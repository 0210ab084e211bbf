package load

import (
	"bufio"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/smg-go/smg/test/sim"
)

// AllocFigure is one dispatch-path benchmark's allocation per request, from
// `go test -bench -benchmem` (deterministic, unlike the timings).
type AllocFigure struct {
	Bytes, Objects float64 // B/op, allocs/op
}

// benchLine matches e.g. "BenchmarkDispatch/sglang/non-streaming-2  5000  31000 ns/op  6726 B/op  79 allocs/op".
var benchLine = regexp.MustCompile(`^BenchmarkDispatch/(\S+?)(?:-\d+)?\s.*?\s([0-9.]+) B/op\s+([0-9.]+) allocs/op`)

// ParseDispatchAllocs reads `go test -bench Dispatch -benchmem` output and returns the
// figures of app/dispatch's BenchmarkDispatch keyed by sub-benchmark ("sglang/streaming",
// "vllm/non-streaming", ...). Other lines are ignored.
func ParseDispatchAllocs(r io.Reader) (map[string]AllocFigure, error) {
	out := map[string]AllocFigure{}
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		m := benchLine.FindStringSubmatch(strings.TrimSpace(sc.Text()))
		if m == nil {
			continue
		}
		b, err1 := strconv.ParseFloat(m[2], 64)
		o, err2 := strconv.ParseFloat(m[3], 64)
		if err1 != nil || err2 != nil {
			continue
		}
		out[m[1]] = AllocFigure{Bytes: b, Objects: o}
	}
	return out, sc.Err()
}

// allocKey is the BenchmarkDispatch sub-benchmark of a scenario's engine and mode.
func allocKey(s Scenario) string {
	mode := "non-streaming"
	if s.Stream {
		mode = "streaming"
	}
	eng := s.Engine
	if eng == sim.EngineVLLM {
		eng = "vllm"
	}
	return eng + "/" + mode
}

// medianCPU is the median over the pairs of mode A's (the gateway's) or B's (the direct
// client's) CPU µs per request of process name.
func medianCPU(c Comparison, gateway bool, name string) float64 {
	xs := make([]float64, 0, len(c.Pairs))
	for _, p := range c.Pairs {
		s := p.B
		if gateway {
			s = p.A
		}
		xs = append(xs, s.CPUPerRequest(name))
	}
	return Median(xs)
}

// Overview targets (medians over the A/B pairs, zero-latency sims).
const (
	TargetGatewayCPUc32   = 110.0 // µs of gateway CPU per request at c=32
	TargetThroughputC32   = 0.8   // gateway ÷ direct throughput at c=32
	TargetAddedP50c4      = 0.4   // ms the gateway adds to the direct p50 at c=4
	TargetDispatchBytes   = 8192  // B/op of one PD request in BenchmarkDispatch
	TargetDispatchObjects = 80    // allocs/op of one PD request in BenchmarkDispatch
)

// WriteOverview prints the side-by-side table of one run: per scenario the gateway's CPU
// per request (from /proc/<pid>/stat over the measured phases), the direct client's and
// their quotient (which evens out the machine's speed drifting between runs), the
// throughput ratio and added p50/p99 against the direct client, and the dispatch-path
// benchmark's allocations per request for the same engine and mode (allocs may be nil);
// then the CPU, throughput, latency and allocation targets, judged on these figures.
func WriteOverview(out io.Writer, r SuiteResult, allocs map[string]AllocFigure) {
	fmt.Fprintf(out, "\n### overview (medians over the A/B pairs; allocations from BenchmarkDispatch)\n")
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "scenario\tgateway cpu µs/req\tdirect client cpu µs/req\tgw ÷ client\tthroughput ×\t+p50 ms\t+p99 ms\tdispatch B/op\tdispatch allocs/op\t")
	type verdict struct{ cpu, tput, p50 []string }
	var v verdict
	cpuOK, tputOK, p50OK := true, true, true
	judgedCPU, judgedTput, judgedP50 := false, false, false
	for _, sr := range r.Scenarios {
		c := sr.Comparison
		if len(c.Pairs) == 0 {
			continue
		}
		m := c.Median()
		gw, dc := medianCPU(c, true, "gateway"), medianCPU(c, false, "client")
		b, o := "-", "-"
		if a, ok := allocs[allocKey(sr.Scenario)]; ok {
			b, o = fmt.Sprintf("%.0f", a.Bytes), fmt.Sprintf("%.0f", a.Objects)
		}
		ratio := "-"
		if dc > 0 {
			ratio = fmt.Sprintf("%.2f", gw/dc)
		}
		fmt.Fprintf(tw, "%s\t%.0f\t%.0f\t%s\t%.3f\t%+.3f\t%+.3f\t%s\t%s\t\n", sr.Scenario.Name(), gw, dc, ratio, m.Throughput, m.AddedP50, m.AddedP99, b, o)
		s := sr.Scenario
		if s.Realistic {
			continue
		}
		name := shortName(s)
		if s.Concurrency == 32 {
			judgedCPU, judgedTput = true, true
			cpuOK = cpuOK && gw <= TargetGatewayCPUc32
			tputOK = tputOK && m.Throughput >= TargetThroughputC32
			v.cpu = append(v.cpu, fmt.Sprintf("%s: %.0f µs", name, gw))
			v.tput = append(v.tput, fmt.Sprintf("%s: %.3f×", name, m.Throughput))
		}
		if s.Concurrency == 4 {
			judgedP50 = true
			p50OK = p50OK && m.AddedP50 <= TargetAddedP50c4
			v.p50 = append(v.p50, fmt.Sprintf("%s: %+.3f ms", name, m.AddedP50))
		}
	}
	_ = tw.Flush()
	ts := []TargetResult{
		{Goal: fmt.Sprintf("zero-latency c=32: gateway CPU ≤ %.0f µs per request", TargetGatewayCPUc32), Values: v.cpu, Met: cpuOK, Judged: judgedCPU},
		{Goal: fmt.Sprintf("zero-latency c=32: throughput ≥ %.2f× direct", TargetThroughputC32), Values: v.tput, Met: tputOK, Judged: judgedTput},
		{Goal: fmt.Sprintf("zero-latency c=4: added p50 ≤ %.1f ms", TargetAddedP50c4), Values: v.p50, Met: p50OK, Judged: judgedP50},
	}
	at := TargetResult{Goal: fmt.Sprintf("BenchmarkDispatch: ≤ %d B and ≤ %d allocations per PD request", TargetDispatchBytes, TargetDispatchObjects), Met: true}
	for _, k := range []string{"sglang/non-streaming", "sglang/streaming", "vllm/non-streaming", "vllm/streaming"} {
		if a, ok := allocs[k]; ok {
			at.Judged = true
			at.Met = at.Met && a.Bytes <= TargetDispatchBytes && a.Objects <= TargetDispatchObjects
			at.Values = append(at.Values, fmt.Sprintf("%s: %.0f B, %.0f", k, a.Bytes, a.Objects))
		}
	}
	WriteTargets(out, append(ts, at))
}
