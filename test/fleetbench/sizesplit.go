package fleetbench

import (
	"fmt"
	"io"
	"time"
)

// LongPromptChars is where SizeSplit divides prompts: a request whose messages hold at least
// this many characters (about 2000 tokens at the simulators' ~4 characters per token) is
// "long", any other "short". On the mixed workload it separates the short prompts (50–200
// words) from the questions about a 6000-word document.
const LongPromptChars = 8000

// SizeSplit summarises the successful requests' TTFTs by prompt size: "short" and "long"
// (LongPromptChars), each present only when it has samples. rs[i].Index indexes reqs.
func SizeSplit(rs []Result, reqs []Request) map[string]Quantiles {
	by := map[string][]time.Duration{}
	for _, r := range rs {
		if r.Err != "" || r.Index < 0 || r.Index >= len(reqs) {
			continue
		}
		n := 0
		for _, m := range reqs[r.Index].Messages {
			n += len(m.Content)
		}
		class := "short"
		if n >= LongPromptChars {
			class = "long"
		}
		by[class] = append(by[class], r.TTFT)
	}
	out := make(map[string]Quantiles, len(by))
	for k, xs := range by {
		out[k] = quantiles(xs)
	}
	return out
}

// WriteSizeSplit prints, for every cell whose requests had both short and long prompts, its
// TTFT p50/p90/p99 per prompt size (Cell.TTFTBySize), one line per cell.
func WriteSizeSplit(out io.Writer, cells []Cell) {
	for _, c := range cells {
		s, l := c.TTFTBySize["short"], c.TTFTBySize["long"]
		if s.N == 0 || l.N == 0 {
			continue
		}
		fmt.Fprintf(out, "ttft by prompt size  %s %s ×%d: short n=%d p50 %.0f p90 %.0f p99 %.0f | long n=%d p50 %.0f p90 %.0f p99 %.0f ms\n",
			c.Workload, c.Policy, c.Replicas, s.N, s.P50, s.P90, s.P99, l.N, l.P50, l.P90, l.P99)
	}
}
