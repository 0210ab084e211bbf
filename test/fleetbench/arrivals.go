package fleetbench

import (
	"fmt"
	"math"
	"time"
)

// Arrivals returns n arrival offsets (from the start of a run, ascending) of a Poisson
// process of rate requests per second: exponential gaps of mean 1/rate, drawn from a PCG
// generator seeded with seed, so a seed always gives the same schedule. Errors: rate <= 0
// or not finite, n < 0.
func Arrivals(seed uint64, rate float64, n int) ([]time.Duration, error) {
	if !(rate > 0) || math.IsInf(rate, 0) {
		return nil, fmt.Errorf("fleetbench: rate must be a positive number of requests per second, got %g", rate)
	}
	if n < 0 {
		return nil, fmt.Errorf("fleetbench: negative request count %d", n)
	}
	r := newRand(seed, 0)
	out := make([]time.Duration, n)
	t := 0.0
	for i := range out {
		t += r.ExpFloat64() / rate
		out[i] = time.Duration(t * float64(time.Second))
	}
	return out, nil
}
