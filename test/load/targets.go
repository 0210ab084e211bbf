package load

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// TargetResult is one issue #10 target judged on the suite's medians.
type TargetResult struct {
	// Goal is the target as the issue states it.
	Goal string
	// Values are the measured figures, one per scenario judged ("sglang: +0.31 ms").
	Values []string
	// Met reports that every judged value meets the goal; Judged that there was one.
	Met, Judged bool
	// Capped reports a goal the machine could not reach for a reason outside the gateway
	// (the open-file limit capping the stream count).
	Capped bool
}

// Status is "MET", "MISSED", "CAPPED" (the environment capped the measurement below the
// goal) or "not run".
func (t TargetResult) Status() string {
	switch {
	case !t.Judged:
		return "not run"
	case t.Met:
		return "MET"
	case t.Capped:
		return "CAPPED"
	}
	return "MISSED"
}

// EvaluateTargets judges the issue #10 targets on the pairs' medians:
//   - zero latency, c=4, non-streaming: +p50 ≤ 0.5 ms;
//   - zero latency, c=32, non-streaming: throughput ≥ 0.75× direct;
//   - realistic latency (every realistic scenario): p50 × ≤ 1.05 and p99 × ≤ 1.10;
//   - streaming, zero latency c=4 and realistic: +TTFT p99 ≤ 1 ms;
//   - open SSE streams: ≥ 10,000 held at once.
func EvaluateTargets(r SuiteResult) []TargetResult {
	type rule struct {
		goal  string
		match func(Scenario) bool
		value func(Ratios) (string, bool)
	}
	rules := []rule{
		{"zero-latency sims, c=4: gateway adds ≤ 0.5 ms to the direct p50",
			func(s Scenario) bool { return !s.Realistic && !s.Stream && s.Concurrency == 4 },
			func(m Ratios) (string, bool) { return fmt.Sprintf("%+.3f ms", m.AddedP50), m.AddedP50 <= 0.5 }},
		{"zero-latency sims, c=32: gateway throughput ≥ 0.75× direct",
			func(s Scenario) bool { return !s.Realistic && !s.Stream && s.Concurrency == 32 },
			func(m Ratios) (string, bool) { return fmt.Sprintf("%.3f×", m.Throughput), m.Throughput >= 0.75 }},
		{"realistic latency: p50 gateway/direct ≤ 1.05",
			func(s Scenario) bool { return s.Realistic },
			func(m Ratios) (string, bool) { return fmt.Sprintf("%.3f", m.P50), m.P50 <= 1.05 }},
		{"realistic latency: p99 gateway/direct ≤ 1.10",
			func(s Scenario) bool { return s.Realistic },
			func(m Ratios) (string, bool) { return fmt.Sprintf("%.3f", m.P99), m.P99 <= 1.10 }},
		{"streaming (zero-latency c=4, realistic): added TTFT ≤ 1 ms at p99",
			func(s Scenario) bool { return s.Stream && (s.Realistic || s.Concurrency == 4) },
			func(m Ratios) (string, bool) { return fmt.Sprintf("%+.3f ms", m.AddedTTFTP99), m.AddedTTFTP99 <= 1 }},
	}
	var out []TargetResult
	for _, ru := range rules {
		t := TargetResult{Goal: ru.goal, Met: true}
		for _, sr := range r.Scenarios {
			if !ru.match(sr.Scenario) || len(sr.Comparison.Pairs) == 0 {
				continue
			}
			v, ok := ru.value(sr.Comparison.Median())
			t.Judged = true
			t.Met = t.Met && ok
			t.Values = append(t.Values, shortName(sr.Scenario)+": "+v)
		}
		out = append(out, t)
	}
	st := TargetResult{Goal: fmt.Sprintf("≥ %d concurrent open SSE streams, memory per stream reported", StreamsTarget)}
	if h := r.Streams; h != nil {
		rss, heap, stack, _ := h.PerStream()
		st.Judged = true
		st.Met = h.StillOpen >= StreamsTarget
		// Every requested stream held, but fewer than the goal because the gateway's
		// open-file limit (2 descriptors per stream) allowed no more.
		st.Capped = !st.Met && h.Requested < StreamsTarget && h.StillOpen == h.Requested && r.StreamsLimit > 0
		st.Values = []string{fmt.Sprintf("%d of %d held (gateway open-file limit %d); %.1f KB RSS, %.1f KB heap, %.1f KB stacks per stream",
			h.StillOpen, h.Requested, r.StreamsLimit, rss/1024, heap/1024, stack/1024)}
	}
	return append(out, st)
}

// shortName is the scenario name without the engine's zero-latency default wording.
func shortName(s Scenario) string { return strings.Replace(s.Name(), "zero-latency ", "", 1) }

// WriteTargets prints the targets table.
func WriteTargets(out io.Writer, ts []TargetResult) {
	fmt.Fprintf(out, "\n### targets (medians over the A/B pairs)\n")
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	for _, t := range ts {
		vals := strings.Join(t.Values, "; ")
		if vals == "" {
			vals = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", t.Status(), t.Goal, vals)
	}
	_ = tw.Flush()
}
