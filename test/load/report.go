package load

import (
	"fmt"
	"io"
	"text/tabwriter"
)

// WriteComparison prints c: one line per phase (mode, requests, throughput, latency and —
// streaming — TTFT and gap percentiles in ms), then one line of ratios per pair and the
// median line.
func WriteComparison(out io.Writer, c Comparison) {
	fmt.Fprintf(out, "\n### %s\n", c.Name)
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	withCPU := len(c.Pairs) > 0 && c.Pairs[0].A.CPU != nil
	head := "pair\tmode\tok\treq/s\tp50 ms\tp90 ms\tp99 ms\tttft p50\tttft p99\tgap p50\tgap p99\t"
	if withCPU {
		head += "cpu µs/req: client\tgateway\tprefill\tdecode\t"
	}
	fmt.Fprintln(tw, head)
	for i, p := range c.Pairs {
		for _, s := range []Summary{p.A, p.B} {
			ttft50, ttft99, gap50, gap99 := "-", "-", "-", "-"
			if c.Stream {
				ttft50, ttft99 = f3(ms(s.TTFT.P50)), f3(ms(s.TTFT.P99))
				gap50, gap99 = f3(ms(s.Gap.P50)), f3(ms(s.Gap.P99))
			}
			fmt.Fprintf(tw, "%d\t%s\t%d\t%.0f\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t", i+1, s.Target, s.OK, s.Throughput,
				f3(ms(s.Latency.P50)), f3(ms(s.Latency.P90)), f3(ms(s.Latency.P99)), ttft50, ttft99, gap50, gap99)
			if withCPU {
				fmt.Fprintf(tw, "%.0f\t%.0f\t%.0f\t%.0f\t", s.CPUPerRequest("client"), s.CPUPerRequest("gateway"),
					s.CPUPerRequest("prefill"), s.CPUPerRequest("decode"))
			}
			fmt.Fprintln(tw)
		}
	}
	_ = tw.Flush()
	tw = tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "pair\tthroughput ×\tp50 ×\tp99 ×\t+p50 ms\t+p99 ms\t+ttft p50 ms\t+ttft p99 ms\t")
	row := func(label string, r Ratios) {
		t50, t99 := "-", "-"
		if c.Stream {
			t50, t99 = sf3(r.AddedTTFTP50), sf3(r.AddedTTFTP99)
		}
		fmt.Fprintf(tw, "%s\t%.3f\t%.3f\t%.3f\t%s\t%s\t%s\t%s\t\n", label, r.Throughput, r.P50, r.P99,
			sf3(r.AddedP50), sf3(r.AddedP99), t50, t99)
	}
	for i, p := range c.Pairs {
		row(fmt.Sprint(i+1), p.Ratios())
	}
	row("median", c.Median())
	_ = tw.Flush()
}

func f3(x float64) string  { return fmt.Sprintf("%.3f", x) }
func sf3(x float64) string { return fmt.Sprintf("%+.3f", x) }

// WriteSummary prints one phase on its own (no comparison).
func WriteSummary(out io.Writer, name string, stream bool, s Summary) {
	fmt.Fprintf(out, "\n### %s\n", name)
	fmt.Fprintf(out, "%s: %d ok, %d failed, %.0f req/s; latency ms p50 %s p90 %s p99 %s max %s\n", s.Target, s.OK,
		s.Errors, s.Throughput, f3(ms(s.Latency.P50)), f3(ms(s.Latency.P90)), f3(ms(s.Latency.P99)), f3(ms(s.Latency.Max)))
	if stream {
		fmt.Fprintf(out, "ttft ms p50 %s p99 %s; inter-chunk gap ms p50 %s p99 %s\n",
			f3(ms(s.TTFT.P50)), f3(ms(s.TTFT.P99)), f3(ms(s.Gap.P50)), f3(ms(s.Gap.P99)))
	}
}
