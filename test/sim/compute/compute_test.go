package compute_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/test/sim/compute"
)

// A prefill alone pays the fixed cost, then its tokens at the full speed, chunk by chunk.
func TestPrefillAloneIsFixedPlusTokensOverSpeed(t *testing.T) {
	t.Parallel()
	e := compute.New(compute.Config{PrefillTokensPerS: 1000, PrefillFixed: 5 * time.Millisecond, ChunkTokens: 400})
	var got []time.Duration
	require.True(t, e.Prefill(1000, func(d time.Duration) bool { got = append(got, d); return true }))
	assert.Equal(t, []time.Duration{5 * time.Millisecond, 400 * time.Millisecond, 400 * time.Millisecond, 200 * time.Millisecond}, got)
	assert.Equal(t, 1005*time.Millisecond, e.PrefillTime(1000))
	got = nil
	require.True(t, e.Prefill(0, func(d time.Duration) bool { got = append(got, d); return true }))
	assert.Empty(t, got, "nothing to compute costs nothing (a decode that received the KV)")
}

// A second prefill that starts during the first one's first chunk halves the speed of
// both for the chunks that overlap.
func TestConcurrentPrefillsShareTheSpeed(t *testing.T) {
	t.Parallel()
	e := compute.New(compute.Config{PrefillTokensPerS: 1000, ChunkTokens: 100})
	var a, b []time.Duration
	started := false
	require.True(t, e.Prefill(300, func(d time.Duration) bool {
		a = append(a, d)
		if !started && d > 0 {
			started = true
			// b runs entirely while a is in progress (inside a's second sleep call).
			require.True(t, e.Prefill(200, func(d time.Duration) bool { b = append(b, d); return true }))
		}
		return true
	}))
	assert.Equal(t, []time.Duration{0, 200 * time.Millisecond, 200 * time.Millisecond}, b, "b: two chunks at half speed (after its zero fixed cost)")
	assert.Equal(t, []time.Duration{0, 100 * time.Millisecond, 100 * time.Millisecond, 100 * time.Millisecond}, a,
		"a: alone at every chunk start (b ran and left inside a's first chunk)")
}

func TestTransferIsPerBlock(t *testing.T) {
	t.Parallel()
	e := compute.New(compute.Config{TransferPerBlock: 2 * time.Millisecond})
	var got time.Duration
	require.True(t, e.Transfer(7, func(d time.Duration) bool { got = d; return true }))
	assert.Equal(t, 14*time.Millisecond, got)
}

// With one slot, a second Acquire waits (Waiting 1) until Release, and the wait is queue
// time; the instance is busy while a slot is held.
func TestSlotsQueueAndBusy(t *testing.T) {
	t.Parallel()
	e := compute.New(compute.Config{MaxRunning: 1})
	require.True(t, e.Acquire(context.Background()))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	start := time.Now()
	assert.False(t, e.Acquire(ctx), "the batch is full")
	waited := time.Since(start)
	// The deadline was set just before the call, so the wait is a little under 30 ms and
	// QueueMS truncates it: the queue time is the wait, neither nothing nor more.
	assert.GreaterOrEqual(t, e.QueueMS(), int64(20), "the wait until the deadline is queue time")
	assert.LessOrEqual(t, e.QueueMS(), waited.Milliseconds(), "no more queue time than the wait")
	got := make(chan bool)
	go func() { got <- e.Acquire(context.Background()) }()
	require.Eventually(t, func() bool { return e.Waiting() == 1 }, 5*time.Second, time.Millisecond)
	e.Release()
	assert.True(t, <-got)
	assert.Zero(t, e.Waiting())
	time.Sleep(5 * time.Millisecond)
	e.Release()
	busy := e.BusyMS()
	assert.GreaterOrEqual(t, busy, int64(35), "busy from the first Acquire to the last Release")
	time.Sleep(5 * time.Millisecond)
	assert.Equal(t, busy, e.BusyMS(), "idle time is not busy")
	e.Reset()
	assert.Zero(t, e.BusyMS())
	assert.Zero(t, e.QueueMS())
}
