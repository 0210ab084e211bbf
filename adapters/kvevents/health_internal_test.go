package kvevents

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestBackoffDoublesFrom100msTo30sAndResets(t *testing.T) {
	t.Parallel()
	bo := Options{}.withDefaults().backoff()
	var got []time.Duration
	for range 11 {
		got = append(got, bo.NextBackOff())
	}
	ms := time.Millisecond
	assert.Equal(t, []time.Duration{100 * ms, 200 * ms, 400 * ms, 800 * ms, 1600 * ms, 3200 * ms, 6400 * ms,
		12800 * ms, 25600 * ms, 30 * time.Second, 30 * time.Second}, got)
	bo.Reset()
	assert.Equal(t, 100*ms, bo.NextBackOff())
}
