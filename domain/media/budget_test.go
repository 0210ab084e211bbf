package media_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/domain/media"
)

func TestBudgetBoundsSlotsAndBytes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := media.NewBudget(2, 100)

	require.NoError(t, b.Acquire(ctx, 60, 0))
	err := b.Acquire(ctx, 50, 20*time.Millisecond)
	assert.True(t, errors.Is(err, media.ErrBudgetBusy), "60+50 > 100: %v", err)
	require.NoError(t, b.Acquire(ctx, 40, 0), "60+40 fits")
	err = b.Acquire(ctx, 0, 20*time.Millisecond)
	assert.True(t, errors.Is(err, media.ErrBudgetBusy), "two slots taken: %v", err)
	s, n := b.InUse()
	assert.Equal(t, 2, s)
	assert.EqualValues(t, 100, n)

	err = b.Acquire(ctx, 101, time.Hour)
	assert.True(t, errors.Is(err, media.ErrOverBudget), "never fits, refused at once: %v", err)

	b.Release(60)
	b.Release(40)
	s, n = b.InUse()
	assert.Zero(t, s)
	assert.Zero(t, n)
}

// A waiter is granted as soon as a release makes room, in arrival order.
func TestBudgetWaiterIsWokenByRelease(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := media.NewBudget(0, 100)
	require.NoError(t, b.Acquire(ctx, 80, 0))
	got := make(chan error, 2)
	go func() { got <- b.Acquire(ctx, 70, 10*time.Second) }()
	require.Eventually(t, func() bool { _, n := b.InUse(); return n == 80 }, time.Second, time.Millisecond)
	time.Sleep(10 * time.Millisecond) // the 70 is queued
	go func() { got <- b.Acquire(ctx, 10, 10*time.Second) }()
	time.Sleep(10 * time.Millisecond)
	select {
	case err := <-got:
		t.Fatalf("granted before a release (FIFO: the 10 waits behind the 70): %v", err)
	default:
	}
	b.Release(80)
	require.NoError(t, <-got)
	require.NoError(t, <-got)
	_, n := b.InUse()
	assert.EqualValues(t, 80, n)
}

func TestBudgetWaitEndsWithTheContext(t *testing.T) {
	t.Parallel()
	b := media.NewBudget(1, 0)
	require.NoError(t, b.Acquire(context.Background(), 1, 0))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := b.Acquire(ctx, 1, time.Hour)
	assert.ErrorIs(t, err, context.Canceled)
	b.Release(1)
	require.NoError(t, b.Acquire(context.Background(), 1, 0), "the cancelled waiter left the queue")
}

// Bytes held without a slot (fetched images, pixel values on their way) count against the
// memory budget but not against the concurrency; Shrink keeps part of a preparation's bytes
// after its slot is returned.
func TestBudgetBytesWithoutASlot(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := media.NewBudget(1, 100)
	require.NoError(t, b.Acquire(ctx, 50, 0))
	require.NoError(t, b.AcquireBytes(ctx, 30, 0), "no slot needed")
	err := b.AcquireBytes(ctx, 30, 10*time.Millisecond)
	assert.ErrorIs(t, err, media.ErrBudgetBusy, "50+30+30 > 100")

	b.Shrink(50, 20) // the preparation ends, its payload stays
	s, n := b.InUse()
	assert.Zero(t, s)
	assert.EqualValues(t, 50, n)
	require.NoError(t, b.Acquire(ctx, 50, 0), "the slot is free again")
	b.Release(50)
	b.ReleaseBytes(20)
	b.ReleaseBytes(30)
	s, n = b.InUse()
	assert.Zero(t, s)
	assert.Zero(t, n)
}
