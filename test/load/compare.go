package load

import (
	"context"
	"fmt"
	"slices"
	"time"
)

// Pair is one A/B round: the same phase through mode A (the gateway) then mode B (direct),
// then, when the comparison has one, through the reference mode (Ref; zero otherwise).
type Pair struct{ A, B, Ref Summary }

// Ratios are the per-pair comparisons of A against B. Ratios are A/B (1 = no difference;
// for throughput < 1 means A is slower, for latency > 1 means A is slower); Added* are
// A − B in milliseconds.
type Ratios struct {
	Throughput           float64 // A req/s ÷ B req/s
	P50, P99             float64 // A latency ÷ B latency
	AddedP50, AddedP99   float64 // ms
	AddedTTFTP50         float64 // ms
	AddedTTFTP99         float64 // ms
	TTFTP99, GapP99Ratio float64 // A ÷ B (0 when B has no such sample)
	// RefThroughput is Ref req/s ÷ B req/s and OfRef A req/s ÷ Ref req/s (0 without a
	// reference mode).
	RefThroughput, OfRef float64
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

// Ratios compares the pair.
func (p Pair) Ratios() Ratios {
	a, b := p.A, p.B
	return Ratios{
		Throughput:    ratio(a.Throughput, b.Throughput),
		P50:           ratio(ms(a.Latency.P50), ms(b.Latency.P50)),
		P99:           ratio(ms(a.Latency.P99), ms(b.Latency.P99)),
		AddedP50:      ms(a.Latency.P50 - b.Latency.P50),
		AddedP99:      ms(a.Latency.P99 - b.Latency.P99),
		AddedTTFTP50:  ms(a.TTFT.P50 - b.TTFT.P50),
		AddedTTFTP99:  ms(a.TTFT.P99 - b.TTFT.P99),
		TTFTP99:       ratio(ms(a.TTFT.P99), ms(b.TTFT.P99)),
		GapP99Ratio:   ratio(ms(a.Gap.P99), ms(b.Gap.P99)),
		RefThroughput: ratio(p.Ref.Throughput, b.Throughput),
		OfRef:         ratio(a.Throughput, p.Ref.Throughput),
	}
}

// Comparison is an alternating A/B run of one scenario.
type Comparison struct {
	// Name describes the scenario.
	Name string
	// Stream reports whether the workload streamed (TTFT and gaps are meaningful).
	Stream bool
	Pairs  []Pair
}

// Median returns, field by field, the median of the pairs' ratios (the mean of the two
// middle values for an even count).
func (c Comparison) Median() Ratios {
	rs := make([]Ratios, len(c.Pairs))
	for i, p := range c.Pairs {
		rs[i] = p.Ratios()
	}
	med := func(f func(Ratios) float64) float64 {
		xs := make([]float64, len(rs))
		for i, r := range rs {
			xs[i] = f(r)
		}
		return Median(xs)
	}
	return Ratios{
		Throughput:    med(func(r Ratios) float64 { return r.Throughput }),
		P50:           med(func(r Ratios) float64 { return r.P50 }),
		P99:           med(func(r Ratios) float64 { return r.P99 }),
		AddedP50:      med(func(r Ratios) float64 { return r.AddedP50 }),
		AddedP99:      med(func(r Ratios) float64 { return r.AddedP99 }),
		AddedTTFTP50:  med(func(r Ratios) float64 { return r.AddedTTFTP50 }),
		AddedTTFTP99:  med(func(r Ratios) float64 { return r.AddedTTFTP99 }),
		TTFTP99:       med(func(r Ratios) float64 { return r.TTFTP99 }),
		GapP99Ratio:   med(func(r Ratios) float64 { return r.GapP99Ratio }),
		RefThroughput: med(func(r Ratios) float64 { return r.RefThroughput }),
		OfRef:         med(func(r Ratios) float64 { return r.OfRef }),
	}
}

// Median is the median of xs (0 for none); xs is not modified.
func Median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// CompareOptions shape an alternating run.
type CompareOptions struct {
	// Phase bounds each measured phase.
	Phase Options
	// Warmup, when its Requests > 0, runs once per mode before the first pair, unrecorded
	// (opens connections, warms caches).
	Warmup Options
	// Pairs is the number of A/B rounds (>= 1).
	Pairs int
	// Probe, when set, samples CPU times before and after every measured phase
	// (Summary.CPU); e.g. Fleet.Probe.
	Probe func() map[string]time.Duration
	// Reference, when set, is a third mode run after B in every pair (and warmed up with
	// them): a bound to read A against, e.g. HTTPHop.
	Reference Target
}

// Compare runs a warm-up of each mode, then opts.Pairs rounds of A then B (then the
// reference, if any), and returns the
// pairs. Any failed request makes the run an error (wrapping ErrFailed) after the phase
// that saw it: a benchmark over failing requests measures nothing useful.
func Compare(ctx context.Context, name string, stream bool, a, b Target, opts CompareOptions) (Comparison, error) {
	c := Comparison{Name: name, Stream: stream}
	if opts.Pairs < 1 {
		return c, fmt.Errorf("load: pairs must be >= 1, got %d", opts.Pairs)
	}
	modes := []Target{a, b}
	if opts.Reference != nil {
		modes = append(modes, opts.Reference)
	}
	if opts.Warmup.Requests > 0 {
		for _, t := range modes {
			s, err := Run(ctx, t, opts.Warmup)
			if err == nil && s.Errors > 0 {
				err = fmt.Errorf("%w: %s warm-up: %d of %d: %s", ErrFailed, t.Name(), s.Errors, s.OK+s.Errors, s.FirstError)
			}
			if err != nil {
				return c, err
			}
		}
	}
	for range opts.Pairs {
		var p Pair
		slots := []*Summary{&p.A, &p.B, &p.Ref} // modes[i]'s summary goes to slots[i]
		for i, t := range modes {
			var before map[string]time.Duration
			if opts.Probe != nil {
				before = opts.Probe()
			}
			s, err := Run(ctx, t, opts.Phase)
			if opts.Probe != nil {
				s.CPU = cpuDelta(before, opts.Probe())
			}
			if err == nil && s.Errors > 0 {
				err = fmt.Errorf("%w: %s: %d of %d: %s", ErrFailed, t.Name(), s.Errors, s.OK+s.Errors, s.FirstError)
			}
			if err != nil {
				return c, err
			}
			*slots[i] = s
		}
		c.Pairs = append(c.Pairs, p)
	}
	return c, nil
}
