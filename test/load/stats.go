package load

import (
	"slices"
	"time"
)

// Sample is one finished request as a client saw it. Durations are wall-clock times
// measured by the client.
type Sample struct {
	// Latency is from the request's start (its scheduled send time) to the last body byte.
	Latency time.Duration
	// TTFT is from the start to the first body byte: for a stream, the first relayed chunk.
	TTFT time.Duration
	// Bytes is the response body size in bytes.
	Bytes int
}

// Percentiles summarises a set of durations with the nearest-rank method (p-th percentile =
// the ⌈p/100·N⌉-th smallest value). All zero when N is 0.
type Percentiles struct {
	N                  int
	P50, P90, P99, Max time.Duration
}

// Summarise sorts xs in place and returns its percentiles.
func Summarise(xs []time.Duration) Percentiles {
	if len(xs) == 0 {
		return Percentiles{}
	}
	slices.Sort(xs)
	return Percentiles{N: len(xs), P50: Quantile(xs, 0.50), P90: Quantile(xs, 0.90),
		P99: Quantile(xs, 0.99), Max: xs[len(xs)-1]}
}

// Quantile returns the nearest-rank q-quantile (0 < q ≤ 1) of sorted (ascending); 0 for an
// empty slice.
func Quantile(sorted []time.Duration, q float64) time.Duration {
	n := len(sorted)
	if n == 0 {
		return 0
	}
	i := int(float64(n)*q+0.999999999) - 1
	return sorted[min(max(i, 0), n-1)]
}

// Summary is the outcome of one bounded load phase.
type Summary struct {
	// Target names what was measured ("gateway", "direct").
	Target string
	// OK counts requests that completed with a 2xx status and a complete body; Errors the
	// rest (transport errors, non-2xx, a stream without [DONE]).
	OK, Errors int
	// FirstError is the first error seen, "" when none.
	FirstError string
	// Elapsed is from the phase start until the last request ended.
	Elapsed time.Duration
	// Throughput is OK / Elapsed, in requests per second.
	Throughput float64
	// Latency and TTFT are over successful requests; Gap is the time between successive
	// body reads that carried data (streaming inter-chunk gaps), over all such reads.
	Latency, TTFT, Gap Percentiles
	// CPU is the CPU time (user + system) each probed process used during the phase, when
	// CompareOptions.Probe was set ("client", "gateway", "prefill", "decode").
	CPU map[string]time.Duration
}

// CPUPerRequest is CPU[name] ÷ OK, in microseconds (0 when unknown).
func (s Summary) CPUPerRequest(name string) float64 {
	d, ok := s.CPU[name]
	if !ok || s.OK == 0 {
		return 0
	}
	return float64(d) / float64(time.Microsecond) / float64(s.OK)
}

// recorder accumulates one worker's samples; merged once at the end of a phase, so the hot
// loop takes no lock.
type recorder struct {
	lat, ttft, gaps []time.Duration
	ok, errs        int
	firstErr        string
}

// gapSink collects inter-chunk gaps for one request without allocating per read.
func (r *recorder) addGap(d time.Duration) { r.gaps = append(r.gaps, d) }

func (r *recorder) add(s Sample, err error) {
	if err != nil {
		r.errs++
		if r.firstErr == "" {
			r.firstErr = err.Error()
		}
		return
	}
	r.ok++
	r.lat = append(r.lat, s.Latency)
	r.ttft = append(r.ttft, s.TTFT)
}

// merge folds the workers' recorders into a Summary.
func merge(target string, rs []*recorder, elapsed time.Duration) Summary {
	var lat, ttft, gaps []time.Duration
	s := Summary{Target: target, Elapsed: elapsed}
	for _, r := range rs {
		s.OK += r.ok
		s.Errors += r.errs
		if s.FirstError == "" {
			s.FirstError = r.firstErr
		}
		lat = append(lat, r.lat...)
		ttft = append(ttft, r.ttft...)
		gaps = append(gaps, r.gaps...)
	}
	if elapsed > 0 {
		s.Throughput = float64(s.OK) / elapsed.Seconds()
	}
	s.Latency, s.TTFT, s.Gap = Summarise(lat), Summarise(ttft), Summarise(gaps)
	return s
}
