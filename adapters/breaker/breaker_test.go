package breaker_test

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/adapters/breaker"
)

// fakeMetrics records every call, for exact assertions.
type fakeMetrics struct {
	mu          sync.Mutex
	state       map[string]int
	transitions []string // worker from->to
	outcomes    map[string]int
	forgotten   []string
}

func newFakeMetrics() *fakeMetrics {
	return &fakeMetrics{state: map[string]int{}, outcomes: map[string]int{}}
}

func (f *fakeMetrics) SetCBState(w string, s int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.state[w] = s
}

func (f *fakeMetrics) IncCBTransition(w, from, to string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.transitions = append(f.transitions, w+" "+from+"->"+to)
}

func (f *fakeMetrics) IncCBOutcome(w, o string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.outcomes[w+" "+o]++
}

func (f *fakeMetrics) ForgetCB(w string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.forgotten = append(f.forgotten, w)
	delete(f.state, w)
}

func (f *fakeMetrics) snapshot() (map[string]int, []string, map[string]int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	st := map[string]int{}
	for k, v := range f.state {
		st[k] = v
	}
	oc := map[string]int{}
	for k, v := range f.outcomes {
		oc[k] = v
	}
	return st, append([]string(nil), f.transitions...), oc
}

func TestClassify(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		status int
		err    error
		want   breaker.Outcome
	}{
		{"transport error", 0, errors.New("connection refused"), breaker.Failure},
		{"no status and no error", 0, nil, breaker.Failure},
		{"200", 200, nil, breaker.Success},
		{"204", 204, nil, breaker.Success},
		{"400 is a client fault", 400, nil, breaker.Success},
		{"401", 401, nil, breaker.Success},
		{"404", 404, nil, breaker.Success},
		{"413", 413, nil, breaker.Success},
		{"422", 422, nil, breaker.Success},
		{"408 request timeout", 408, nil, breaker.Failure},
		{"429 is capacity", 429, nil, breaker.Ignored},
		{"500", 500, nil, breaker.Failure},
		{"501 is not retryable", 501, nil, breaker.Success},
		{"502", 502, nil, breaker.Failure},
		{"503", 503, nil, breaker.Failure},
		{"504", 504, nil, breaker.Failure},
		{"error wins over a status", 200, errors.New("stream broke"), breaker.Failure},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			assert.Equal(t, c.want, breaker.Classify(c.status, c.err))
		})
	}
}

func TestStateAndOutcomeLabels(t *testing.T) {
	t.Parallel()
	assert.Equal(t, "closed", breaker.StateClosed.String())
	assert.Equal(t, "open", breaker.StateOpen.String())
	assert.Equal(t, "half_open", breaker.StateHalfOpen.String())
	assert.Equal(t, []int{0, 1, 2}, []int{int(breaker.StateClosed), int(breaker.StateOpen), int(breaker.StateHalfOpen)})
	assert.Equal(t, "success", breaker.Success.String())
	assert.Equal(t, "failure", breaker.Failure.String())
}

func record(b *breaker.Breaker, o breaker.Outcome, n int) {
	for range n {
		b.Record(o)
	}
}

func TestBreakerOpensOnConsecutiveFailuresOnly(t *testing.T) {
	t.Parallel()
	const url = "http://127.0.0.1:1"
	m := newFakeMetrics()
	b := breaker.New(url, breaker.Settings{FailureThreshold: 3, SuccessThreshold: 2, Timeout: time.Hour}, m)

	record(b, breaker.Failure, 2)
	b.Record(breaker.Success) // resets the consecutive count
	record(b, breaker.Failure, 2)
	record(b, breaker.Ignored, 50) // 429s neither count nor reset
	assert.Equal(t, breaker.StateClosed, b.State())
	assert.True(t, b.Allow())

	b.Record(breaker.Failure)
	assert.Equal(t, breaker.StateOpen, b.State())
	assert.False(t, b.Allow())

	record(b, breaker.Success, 5) // late successes while open do not close it
	assert.Equal(t, breaker.StateOpen, b.State())

	st, tr, oc := m.snapshot()
	assert.Equal(t, map[string]int{url: 1}, st)
	assert.Equal(t, []string{url + " closed->open"}, tr)
	assert.Equal(t, map[string]int{url + " failure": 5, url + " success": 6}, oc)
}

func TestBreakerHalfOpenProbing(t *testing.T) {
	t.Parallel()
	const url = "http://127.0.0.1:2"
	m := newFakeMetrics()
	b := breaker.New(url, breaker.Settings{FailureThreshold: 1, SuccessThreshold: 2, Timeout: 20 * time.Millisecond}, m)

	b.Record(breaker.Failure)
	require.False(t, b.Allow())
	require.False(t, b.ProbeDue(), "open before its timeout: no canary yet")
	// After the open timeout the breaker waits for canaries; no client request goes in.
	require.Eventually(t, b.ProbeDue, 5*time.Second, 5*time.Millisecond)
	assert.Equal(t, breaker.StateHalfOpen, b.State())
	assert.False(t, b.Allow(), "half-open takes no client request")
	record(b, breaker.Success, 5) // late client outcomes do not probe
	assert.Equal(t, breaker.StateHalfOpen, b.State())

	b.Probe(false) // a failing canary reopens
	assert.Equal(t, breaker.StateOpen, b.State())
	assert.False(t, b.Allow())

	require.Eventually(t, b.ProbeDue, 5*time.Second, 5*time.Millisecond)
	b.Probe(true)
	assert.Equal(t, breaker.StateHalfOpen, b.State(), "one passing canary is below the success threshold")
	assert.False(t, b.Allow())
	b.Probe(true)
	assert.Equal(t, breaker.StateClosed, b.State())
	assert.True(t, b.Allow())
	assert.False(t, b.ProbeDue())

	st, tr, _ := m.snapshot()
	assert.Equal(t, 0, st[url])
	assert.Equal(t, []string{
		url + " closed->open", url + " open->half_open", url + " half_open->open",
		url + " open->half_open", url + " half_open->closed",
	}, tr)
}

func TestBreakerEjectOpensAtOnce(t *testing.T) {
	t.Parallel()
	b := breaker.New("http://127.0.0.1:4", breaker.Settings{FailureThreshold: 10, Timeout: time.Hour}, nil)
	b.Record(breaker.Success)
	require.True(t, b.Eject())
	assert.Equal(t, breaker.StateOpen, b.State())
	assert.False(t, b.Allow())

	off := breaker.New("http://127.0.0.1:5", breaker.Settings{FailureThreshold: 1, Disabled: true}, nil)
	assert.False(t, off.Eject(), "a disabled breaker never opens")
	assert.True(t, off.Allow())
}

func TestBreakerDisabledNeverOpens(t *testing.T) {
	t.Parallel()
	m := newFakeMetrics()
	b := breaker.New("http://127.0.0.1:3", breaker.Settings{FailureThreshold: 1, Disabled: true}, m)
	record(b, breaker.Failure, 100)
	assert.Equal(t, breaker.StateClosed, b.State())
	assert.True(t, b.Allow())
	_, tr, oc := m.snapshot()
	assert.Empty(t, tr)
	assert.Equal(t, 100, oc["http://127.0.0.1:3 failure"], "outcomes are still counted")
}

func TestBreakerDefaultsFromZeroSettings(t *testing.T) {
	t.Parallel()
	b := breaker.New("http://127.0.0.1:4", breaker.Settings{}, nil)
	b.Record(breaker.Failure) // a threshold below 1 is taken as 1
	assert.Equal(t, breaker.StateOpen, b.State())
	assert.False(t, b.Allow(), "the default open timeout is 60 s")
}

// TestBreakerConcurrentOutcomes: outcomes and gate reads from many goroutines (run under
// -race); a threshold of failures opens the breaker exactly once.
func TestBreakerConcurrentOutcomes(t *testing.T) {
	t.Parallel()
	m := newFakeMetrics()
	b := breaker.New("http://127.0.0.1:5", breaker.Settings{FailureThreshold: 64, SuccessThreshold: 1, Timeout: time.Hour}, m)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for range 100 {
				_ = b.Allow()
				if g%2 == 0 {
					b.Record(breaker.Failure)
				} else {
					b.Record(breaker.Ignored)
				}
			}
		})
	}
	wg.Wait()
	assert.Equal(t, breaker.StateOpen, b.State())
	_, tr, oc := m.snapshot()
	assert.Equal(t, []string{"http://127.0.0.1:5 closed->open"}, tr)
	assert.Equal(t, 400, oc["http://127.0.0.1:5 failure"])
}
