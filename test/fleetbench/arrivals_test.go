package fleetbench_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/test/fleetbench"
)

func TestArrivalsArePoissonAtTheRate(t *testing.T) {
	t.Parallel()
	const n, rate = 20000, 8.0
	a, err := fleetbench.Arrivals(1, rate, n)
	require.NoError(t, err)
	require.Len(t, a, n)
	for i := 1; i < n; i++ {
		require.GreaterOrEqual(t, a[i], a[i-1], "arrivals ascend")
	}
	// Mean rate: n arrivals over the last one's offset, within 3 % (the sample mean of 20,000
	// exponential gaps has a relative standard deviation of 0.7 %).
	got := float64(n) / a[n-1].Seconds()
	assert.InDelta(t, rate, got, rate*0.03)
	// Exponential gaps: their variance is their mean squared (1/rate²), within 10 %.
	var sum, sq float64
	prev := time.Duration(0)
	for _, x := range a {
		g := (x - prev).Seconds()
		sum += g
		sq += g * g
		prev = x
	}
	mean := sum / n
	variance := sq/n - mean*mean
	assert.InDelta(t, mean*mean, variance, mean*mean*0.1, "variance of exponential gaps is mean²")
}

func TestArrivalsAreDeterministicPerSeed(t *testing.T) {
	t.Parallel()
	a, err := fleetbench.Arrivals(7, 4, 50)
	require.NoError(t, err)
	b, err := fleetbench.Arrivals(7, 4, 50)
	require.NoError(t, err)
	c, err := fleetbench.Arrivals(8, 4, 50)
	require.NoError(t, err)
	assert.Equal(t, a, b)
	assert.NotEqual(t, a, c)
}

func TestArrivalsRejectBadInput(t *testing.T) {
	t.Parallel()
	for _, rate := range []float64{0, -1} {
		_, err := fleetbench.Arrivals(1, rate, 3)
		assert.Error(t, err, "rate %g", rate)
	}
	_, err := fleetbench.Arrivals(1, 1, -1)
	assert.Error(t, err)
}
