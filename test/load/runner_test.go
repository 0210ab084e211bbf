package load_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/test/load"
)

// fakeTarget counts calls, sleeps delay per call and fails every failEvery-th call.
type fakeTarget struct {
	name      string
	calls     atomic.Int64
	inflight  atomic.Int64
	maxIn     atomic.Int64
	delay     time.Duration
	failEvery int64
}

func (f *fakeTarget) Name() string { return f.name }

func (f *fakeTarget) Do(ctx context.Context, start time.Time, _ *load.Worker) (load.Sample, error) {
	n := f.calls.Add(1)
	in := f.inflight.Add(1)
	defer f.inflight.Add(-1)
	for {
		m := f.maxIn.Load()
		if in <= m || f.maxIn.CompareAndSwap(m, in) {
			break
		}
	}
	if f.delay > 0 {
		select {
		case <-time.After(f.delay):
		case <-ctx.Done():
			return load.Sample{}, ctx.Err()
		}
	}
	if f.failEvery > 0 && n%f.failEvery == 0 {
		return load.Sample{}, errors.New("injected failure")
	}
	return load.Sample{Latency: time.Since(start), TTFT: time.Since(start), Bytes: 1}, nil
}

// hangGuard bounds every run in these tests (a hang guard, not a timing assertion).
const hangGuard = 30 * time.Second

func TestRunRejectsUnboundedPhases(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		o    load.Options
	}{
		{"no request count", load.Options{Concurrency: 1, Duration: time.Second}},
		{"no time limit", load.Options{Concurrency: 1, Requests: 10}},
		{"no concurrency", load.Options{Requests: 10, Duration: time.Second}},
		{"negative rate", load.Options{Concurrency: 1, Requests: 10, Duration: time.Second, Rate: -1}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := &fakeTarget{name: "fake"}
			_, err := load.Run(context.Background(), f, tc.o)
			require.Error(t, err)
			assert.Zero(t, f.calls.Load(), "nothing sent")
		})
	}
}

func TestRunStopsAtTheRequestCount(t *testing.T) {
	t.Parallel()
	for _, rate := range []float64{0, 5000} {
		f := &fakeTarget{name: "fake"}
		s, err := load.Run(context.Background(), f, load.Options{Concurrency: 4, Rate: rate, Requests: 50, Duration: hangGuard})
		require.NoError(t, err)
		assert.EqualValues(t, 50, f.calls.Load(), "rate %g", rate)
		assert.Equal(t, 50, s.OK)
		assert.Equal(t, 50, s.Latency.N)
		assert.Zero(t, s.Errors)
		assert.LessOrEqual(t, f.maxIn.Load(), int64(4), "never more than the concurrency in flight")
		assert.Positive(t, s.Throughput)
	}
}

func TestRunStopsAtTheTimeLimit(t *testing.T) {
	t.Parallel()
	f := &fakeTarget{name: "fake", delay: time.Millisecond}
	done := make(chan struct{})
	var s load.Summary
	go func() {
		defer close(done)
		s, _ = load.Run(context.Background(), f, load.Options{Concurrency: 2, Requests: 1 << 30, Duration: 50 * time.Millisecond})
	}()
	select {
	case <-done:
	case <-time.After(hangGuard):
		t.Fatal("the phase did not stop at its time limit")
	}
	assert.Less(t, f.calls.Load(), int64(1<<30))
	assert.EqualValues(t, f.calls.Load(), s.OK)
}

func TestRunCountsFailures(t *testing.T) {
	t.Parallel()
	f := &fakeTarget{name: "fake", failEvery: 4}
	s, err := load.Run(context.Background(), f, load.Options{Concurrency: 1, Requests: 20, Duration: hangGuard})
	require.NoError(t, err)
	assert.Equal(t, 15, s.OK)
	assert.Equal(t, 5, s.Errors)
	assert.Equal(t, "injected failure", s.FirstError)
}

func TestCompareAlternatesAndFailsOnErrors(t *testing.T) {
	t.Parallel()
	a, b := &fakeTarget{name: "gateway"}, &fakeTarget{name: "direct"}
	opts := load.CompareOptions{Pairs: 3,
		Phase:  load.Options{Concurrency: 2, Requests: 10, Duration: hangGuard},
		Warmup: load.Options{Concurrency: 2, Requests: 5, Duration: hangGuard}}
	c, err := load.Compare(context.Background(), "fake", false, a, b, opts)
	require.NoError(t, err)
	require.Len(t, c.Pairs, 3)
	for _, p := range c.Pairs {
		assert.Equal(t, "gateway", p.A.Target)
		assert.Equal(t, "direct", p.B.Target)
		assert.Equal(t, 10, p.A.OK)
	}
	assert.EqualValues(t, 35, a.calls.Load(), "warm-up + 3 phases")
	assert.EqualValues(t, 35, b.calls.Load())

	bad := &fakeTarget{name: "gateway", failEvery: 3}
	_, err = load.Compare(context.Background(), "fake", false, bad, b, opts)
	require.ErrorIs(t, err, load.ErrFailed)
	assert.ErrorContains(t, err, "injected failure")

	_, err = load.Compare(context.Background(), "fake", false, a, b, load.CompareOptions{Phase: opts.Phase})
	assert.ErrorContains(t, err, "pairs must be >= 1")
}

func TestCompareRunsTheReferenceThirdInEveryPair(t *testing.T) {
	t.Parallel()
	a, b, ref := &fakeTarget{name: "gateway"}, &fakeTarget{name: "direct"}, &fakeTarget{name: "hop"}
	opts := load.CompareOptions{Pairs: 2, Reference: ref,
		Phase:  load.Options{Concurrency: 1, Requests: 8, Duration: hangGuard},
		Warmup: load.Options{Concurrency: 1, Requests: 3, Duration: hangGuard}}
	c, err := load.Compare(context.Background(), "fake", false, a, b, opts)
	require.NoError(t, err)
	require.Len(t, c.Pairs, 2)
	for _, p := range c.Pairs {
		assert.Equal(t, "hop", p.Ref.Target)
		assert.Equal(t, 8, p.Ref.OK)
		r := p.Ratios()
		assert.InDelta(t, p.Ref.Throughput/p.B.Throughput, r.RefThroughput, 1e-9)
		assert.InDelta(t, p.A.Throughput/p.Ref.Throughput, r.OfRef, 1e-9)
	}
	assert.EqualValues(t, 19, ref.calls.Load(), "warm-up + 2 phases")
	assert.Zero(t, load.Pair{A: c.Pairs[0].A, B: c.Pairs[0].B}.Ratios().OfRef, "no reference, no ratio to it")

	_, err = load.Compare(context.Background(), "fake", false, a, b, load.CompareOptions{Pairs: 1, Phase: opts.Phase,
		Reference: &fakeTarget{name: "hop", failEvery: 2}})
	require.ErrorIs(t, err, load.ErrFailed)
}
