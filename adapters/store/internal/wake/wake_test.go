package wake_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/adapters/store/internal/wake"
)

const w = "http://127.0.0.1:1"

// waiter starts a Wait and returns its result channel once the waiter is queued.
func waiter(t *testing.T, q *wake.Queues, ctx context.Context, queued int) <-chan error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- q.Wait(ctx, w) }()
	require.Eventually(t, func() bool { return q.Len(w) == queued }, 5*time.Second, time.Millisecond)
	return done
}

func TestNotifyWakesOldestFirstOnePerSlot(t *testing.T) {
	t.Parallel()
	q := wake.New(time.Hour)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	first := waiter(t, q, ctx, 1)
	second := waiter(t, q, ctx, 2)
	third := waiter(t, q, ctx, 3)

	q.Notify(w, 1)
	require.NoError(t, <-first)
	assert.Equal(t, 2, q.Len(w), "one notification wakes one waiter")
	q.Notify(w, 2)
	require.NoError(t, <-second)
	require.NoError(t, <-third)
	assert.Zero(t, q.Len(w))
}

func TestNotifyWithoutWaitersLeavesOnePermit(t *testing.T) {
	t.Parallel()
	q := wake.New(time.Hour)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	q.Notify(w, 3)
	require.NoError(t, q.Wait(ctx, w), "the permit lets the first Wait through")
	short, cancelShort := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancelShort()
	assert.ErrorIs(t, q.Wait(short, w), context.DeadlineExceeded, "permits do not accumulate")
}

func TestCancelledWaiterHandsItsWakeOn(t *testing.T) {
	t.Parallel()
	q := wake.New(time.Hour)
	bg, cancelAll := context.WithCancel(context.Background())
	defer cancelAll()
	leaving, leave := context.WithCancel(bg)
	first := waiter(t, q, leaving, 1)
	second := waiter(t, q, bg, 2)
	leave()
	assert.ErrorIs(t, <-first, context.Canceled)
	q.Notify(w, 1)
	require.NoError(t, <-second)
}

func TestWaitReturnsAtThePollInterval(t *testing.T) {
	t.Parallel()
	q := wake.New(10 * time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	require.NoError(t, q.Wait(ctx, w))
	require.NoError(t, ctx.Err(), "returned by the poll, not the hang guard")
	assert.Zero(t, q.Len(w), "a polled-out waiter leaves the queue")
}
