package fleetbench

import (
	"fmt"
	"io"
	"sort"
	"strings"
)

// Reusable is the share of a workload's prompt text an ideal cache could serve: for each
// request, the longest prefix its rendered prompt ("role: content\n" per message, as the
// simulators render it) shares with any earlier request's, summed over the requests and
// divided by their total length (bytes). It is the ceiling of the prefill cache-hit rate
// for one fleet that never evicts and always routes a prompt where its prefix is; a
// routing's hit rate ÷ Reusable is the share of the reusable tokens it reached.
// Token boundaries and block granularity are ignored (the ceiling is slightly high).
func Reusable(reqs []Request) float64 {
	prompts := make([]string, len(reqs))
	var total, shared int
	for i, r := range reqs {
		var b strings.Builder
		for _, m := range r.Messages {
			b.WriteString(m.Role)
			b.WriteString(": ")
			b.WriteString(m.Content)
			b.WriteByte('\n')
		}
		p := b.String()
		prompts[i] = p
		total += len(p)
		best := 0
		for _, q := range prompts[:i] {
			best = max(best, commonPrefix(p, q))
		}
		shared += best
	}
	if total == 0 {
		return 0
	}
	return float64(shared) / float64(total)
}

func commonPrefix(a, b string) int {
	n := min(len(a), len(b))
	i := 0
	for i < n && a[i] == b[i] {
		i++
	}
	return i
}

// WriteReusable prints each workload's Reusable share (Report.Reusable), sorted by name.
func WriteReusable(out io.Writer, reusable map[string]float64) {
	if len(reusable) == 0 {
		return
	}
	names := make([]string, 0, len(reusable))
	for n := range reusable {
		names = append(names, n)
	}
	sort.Strings(names)
	fmt.Fprint(out, "reusable share (ideal cache ceiling of the hit rate):")
	for _, n := range names {
		fmt.Fprintf(out, " %s %.3f", n, reusable[n])
	}
	fmt.Fprintln(out)
}
