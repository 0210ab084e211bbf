package admission_test

import (
	"context"
	"errors"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/adapters/store/memory"
	"github.com/smg-go/smg/app/admission"
	"github.com/smg-go/smg/domain/errs"
	"github.com/smg-go/smg/domain/worker"
	"github.com/smg-go/smg/ports"
)

const url = "http://127.0.0.1:9/decode"

var quiet = slog.New(slog.DiscardHandler)

// pdMetrics counts the admission series; other PDMetrics methods are not called here.
type pdMetrics struct {
	ports.PDMetrics
	waits, sheds atomic.Int64
}

func (m *pdMetrics) IncAdmissionWait() { m.waits.Add(1) }
func (m *pdMetrics) IncAdmissionShed() { m.sheds.Add(1) }

// spySlots reports each Wait on waiting.
type spySlots struct {
	ports.SlotCounter
	waiting chan struct{}
}

func (s *spySlots) Wait(ctx context.Context, w string) error {
	select {
	case s.waiting <- struct{}{}:
	default:
	}
	return s.SlotCounter.Wait(ctx, w)
}

// failingSlots fails every Claim.
type failingSlots struct{ ports.SlotCounter }

func (failingSlots) Claim(context.Context, string, int, int) (ports.Lease, bool, error) {
	return ports.Lease{}, false, errors.New("redis slots: claim: i/o timeout")
}

func decode(labels map[string]string) *worker.Live {
	return worker.NewLive(worker.Worker{ID: "d1", URL: url, Role: worker.RoleDecode, Labels: labels}, worker.StatusReady)
}

func window(n string) *worker.Live { return decode(map[string]string{"max_running_requests": n}) }

func newSlots(ttl time.Duration) *memory.Slots {
	return memory.NewSlots(memory.SlotsOptions{LeaseTTL: ttl, PollInterval: time.Minute})
}

func inUse(t *testing.T, s ports.SlotCounter) int {
	t.Helper()
	n, err := s.InUse(context.Background(), url)
	require.NoError(t, err)
	return n
}

func guard(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestWorkerWithoutWindowIsNotGated(t *testing.T) {
	t.Parallel()
	slots, m := newSlots(time.Minute), &pdMetrics{}
	a := admission.New(slots, admission.Options{Metrics: m, Logger: quiet})
	for i := 0; i < 3; i++ {
		release, err := a.Admit(guard(t), decode(nil), 4)
		require.NoError(t, err)
		require.NotNil(t, release)
		release()
	}
	assert.Zero(t, inUse(t, slots), "nothing claimed for a worker without max_running_requests")
}

func TestAdmitClaimsOneSlotPerBackendRequest(t *testing.T) {
	t.Parallel()
	slots := newSlots(time.Minute)
	a := admission.New(slots, admission.Options{Budget: 30 * time.Second, Logger: quiet})
	release, err := a.Admit(guard(t), window("8"), 3)
	require.NoError(t, err)
	assert.Equal(t, 3, inUse(t, slots))
	r1, err := a.Admit(guard(t), window("8"), 0)
	require.NoError(t, err)
	assert.Equal(t, 4, inUse(t, slots), "n < 1 counts as one request")
	release()
	release()
	assert.Equal(t, 1, inUse(t, slots), "release is idempotent")
	r1()
	assert.Zero(t, inUse(t, slots))
}

func TestFullWindowSheds(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name           string
		budget         time.Duration
		n              int
		wantRetryAfter int
		wantMessage    string
	}{
		{"budget 0 sheds at once", 0, 1, 1,
			"Decode worker 'http://127.0.0.1:9/decode' is at capacity: its admission window of 2 stayed full for 0s"},
		{"a full window sheds after the budget", 200 * time.Millisecond, 1, 1, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			slots, m := newSlots(time.Minute), &pdMetrics{}
			a := admission.New(slots, admission.Options{Budget: c.budget, Metrics: m, Logger: quiet})
			held, err := a.Admit(guard(t), window("2"), 2)
			require.NoError(t, err)
			defer held()

			release, err := a.Admit(guard(t), window("2"), c.n)
			assert.Nil(t, release)
			e, ok := errs.As(err)
			require.True(t, ok, "a *errs.Error, got %v", err)
			assert.Equal(t, 503, e.Status)
			assert.Equal(t, "worker_overload_protection_shed", e.Code)
			assert.Equal(t, c.wantRetryAfter, e.RetryAfterSecs)
			assert.Equal(t, "decode", e.Leg)
			assert.False(t, e.Retryable)
			if c.wantMessage != "" {
				assert.Equal(t, c.wantMessage, e.Message)
			}
			assert.Equal(t, int64(1), m.sheds.Load())
			assert.Zero(t, m.waits.Load())
			assert.Equal(t, 2, inUse(t, slots), "a shed claims nothing")
		})
	}
}

// A dispatch needing more slots than the whole window can never be admitted: 400
// admission_window_exceeded at once (even with an hour of budget and a free window), not a
// shed, and nothing claimed.
func TestMoreSlotsThanTheWindowIsRefused(t *testing.T) {
	t.Parallel()
	slots, m := newSlots(time.Minute), &pdMetrics{}
	a := admission.New(slots, admission.Options{Budget: time.Hour, Metrics: m, Logger: quiet})
	start := time.Now()
	release, err := a.Admit(guard(t), window("2"), 3)
	assert.Less(t, time.Since(start), time.Second, "no wait")
	assert.Nil(t, release)
	e, ok := errs.As(err)
	require.True(t, ok, "a *errs.Error, got %v", err)
	assert.Equal(t, 400, e.Status)
	assert.Equal(t, "admission_window_exceeded", e.Code)
	assert.Equal(t, "decode", e.Leg)
	assert.False(t, e.Retryable)
	assert.Zero(t, e.RetryAfterSecs)
	assert.Contains(t, e.Message, "needs 3 decode slots")
	assert.Contains(t, e.Message, "admission window of 2")
	assert.Zero(t, m.sheds.Load(), "not a shed")
	assert.Zero(t, inUse(t, slots))
}

// A waiting dispatch is admitted when a slot is released (the poll interval is a minute, so
// only the release can wake it) and counted as a wait.
func TestWaitingDispatchIsWokenByARelease(t *testing.T) {
	t.Parallel()
	spy := &spySlots{SlotCounter: newSlots(time.Minute), waiting: make(chan struct{}, 1)}
	m := &pdMetrics{}
	a := admission.New(spy, admission.Options{Budget: time.Minute, Metrics: m, Logger: quiet})
	ctx := guard(t)
	held, err := a.Admit(ctx, window("1"), 1)
	require.NoError(t, err)

	type result struct {
		release func()
		err     error
	}
	got := make(chan result, 1)
	go func() {
		r, err := a.Admit(ctx, window("1"), 1)
		got <- result{r, err}
	}()
	<-spy.waiting
	held()
	r := <-got
	require.NoError(t, r.err)
	assert.Equal(t, int64(1), m.waits.Load())
	assert.Zero(t, m.sheds.Load())
	assert.Equal(t, 1, inUse(t, spy))
	r.release()
	assert.Zero(t, inUse(t, spy))
}

// A client that goes away while waiting gets ctx's error, not a shed.
func TestCancelWhileWaiting(t *testing.T) {
	t.Parallel()
	spy := &spySlots{SlotCounter: newSlots(time.Minute), waiting: make(chan struct{}, 1)}
	m := &pdMetrics{}
	a := admission.New(spy, admission.Options{Budget: time.Minute, Metrics: m, Logger: quiet})
	held, err := a.Admit(guard(t), window("1"), 1)
	require.NoError(t, err)
	defer held()
	ctx, cancel := context.WithCancel(guard(t))
	done := make(chan error, 1)
	go func() {
		_, err := a.Admit(ctx, window("1"), 1)
		done <- err
	}()
	<-spy.waiting
	cancel()
	assert.ErrorIs(t, <-done, context.Canceled)
	assert.Zero(t, m.sheds.Load())
	assert.Zero(t, m.waits.Load())
}

// The slots stay held past the lease TTL while the leg runs (renewed), and are returned
// when the leg ends even though the request's context was cancelled (client disconnect).
func TestLeaseRenewedWhileHeldAndReleasedAfterDisconnect(t *testing.T) {
	t.Parallel()
	slots := newSlots(600 * time.Millisecond)
	a := admission.New(slots, admission.Options{Logger: quiet})
	ctx, cancel := context.WithCancel(guard(t))
	release, err := a.Admit(ctx, window("1"), 1)
	require.NoError(t, err)
	time.Sleep(1500 * time.Millisecond) // 2.5 TTLs, renewed every TTL/3
	assert.Equal(t, 1, inUse(t, slots), "the renewer keeps the lease")
	_, err = a.Admit(guard(t), window("1"), 1)
	assert.Error(t, err, "the window is still full")
	cancel()
	release()
	assert.Zero(t, inUse(t, slots))
}

// A failing store does not fail dispatches: they are admitted without the window.
func TestStoreFailureAdmitsUngated(t *testing.T) {
	t.Parallel()
	m := &pdMetrics{}
	a := admission.New(failingSlots{newSlots(time.Minute)}, admission.Options{Metrics: m, Logger: quiet})
	release, err := a.Admit(guard(t), window("1"), 1)
	require.NoError(t, err)
	require.NotNil(t, release)
	release()
	assert.Zero(t, m.sheds.Load())
}

func TestNilMetrics(t *testing.T) {
	t.Parallel()
	a := admission.New(newSlots(time.Minute), admission.Options{Logger: quiet})
	held, err := a.Admit(guard(t), window("1"), 1)
	require.NoError(t, err)
	defer held()
	_, err = a.Admit(guard(t), window("1"), 1)
	e, ok := errs.As(err)
	require.True(t, ok)
	assert.Equal(t, "worker_overload_protection_shed", e.Code)
}
