package admission_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/domain/admission"
	"github.com/smg-go/smg/domain/errs"
	"github.com/smg-go/smg/domain/worker"
)

func TestWindowOf(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name   string
		labels map[string]string
		want   int
		gated  bool
	}{
		{"label set", map[string]string{"max_running_requests": "8"}, 8, true},
		{"spaces trimmed", map[string]string{"max_running_requests": " 256 "}, 256, true},
		{"no label: not gated (vLLM)", nil, 0, false},
		{"zero: not gated", map[string]string{"max_running_requests": "0"}, 0, false},
		{"negative: not gated", map[string]string{"max_running_requests": "-4"}, 0, false},
		{"not a number: not gated", map[string]string{"max_running_requests": "lots"}, 0, false},
		{"max_num_seqs first (TokenSpeed)", map[string]string{"max_num_seqs": "12", "max_running_requests": "64"}, 12, true},
		{"max_num_seqs alone", map[string]string{"max_num_seqs": "3"}, 3, true},
		{"bad max_num_seqs falls back", map[string]string{"max_num_seqs": "0", "max_running_requests": "5"}, 5, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			n, gated := admission.WindowOf(worker.Worker{URL: "http://127.0.0.1:1", Labels: c.labels})
			assert.Equal(t, c.want, n)
			assert.Equal(t, c.gated, gated)
		})
	}
}

func TestParseWindowError(t *testing.T) {
	t.Parallel()
	_, err := admission.ParseWindow("x")
	require.EqualError(t, err, `max_running_requests must be a positive integer (got "x")`)
}

func TestDecide(t *testing.T) {
	t.Parallel()
	const budget = 30 * time.Second
	for _, c := range []struct {
		name      string
		claimed   bool
		n, window int
		waited    time.Duration
		budget    time.Duration
		want      admission.Decision
	}{
		{"claimed", true, 1, 8, 0, budget, admission.Admit},
		{"claimed after a wait", true, 1, 8, 10 * time.Second, budget, admission.Admit},
		{"full with budget left waits", false, 1, 8, 0, budget, admission.Wait},
		{"full at the budget sheds", false, 1, 8, budget, budget, admission.Shed},
		{"budget 0 sheds at once", false, 1, 8, 0, 0, admission.Shed},
		{"n above the window never fits: refused at once", false, 9, 8, 0, budget, admission.Refuse},
		{"n above the window is refused, not shed, at the budget", false, 9, 8, budget, budget, admission.Refuse},
		{"n equal to the window may wait", false, 8, 8, 0, budget, admission.Wait},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			assert.Equal(t, c.want, admission.Decide(c.claimed, c.n, c.window, c.waited, c.budget))
		})
	}
	assert.Equal(t, "shed", admission.Shed.String())
	assert.Equal(t, "refuse", admission.Refuse.String())
}

func TestRemaining(t *testing.T) {
	t.Parallel()
	assert.Equal(t, 20*time.Second, admission.Remaining(10*time.Second, 30*time.Second))
	assert.Equal(t, time.Duration(0), admission.Remaining(40*time.Second, 30*time.Second))
}

func TestRetryAfterSecs(t *testing.T) {
	t.Parallel()
	for budget, want := range map[time.Duration]int{
		0: 1, 300 * time.Millisecond: 1, 2500 * time.Millisecond: 3, 30 * time.Second: 10,
	} {
		assert.Equal(t, want, admission.RetryAfterSecs(budget), "budget %s", budget)
	}
}

func TestShedError(t *testing.T) {
	t.Parallel()
	got := admission.ShedError("http://10.0.0.2:8000", 8, 30*time.Second, 30*time.Second)
	assert.Equal(t, &errs.Error{
		Status: 503, Code: "worker_overload_protection_shed", Leg: "decode", RetryAfterSecs: 10,
		Message: "Decode worker 'http://10.0.0.2:8000' is at capacity: its admission window of 8 stayed full for 30s",
	}, got)
}

func TestTooLargeError(t *testing.T) {
	t.Parallel()
	got := admission.TooLargeError("http://10.0.0.2:8000", 9, 8)
	assert.Equal(t, &errs.Error{
		Status: 400, Code: "admission_window_exceeded", Leg: "decode",
		Message: "The request needs 9 decode slots (one per prompt and sample), more than the admission window of 8 of decode worker " +
			"'http://10.0.0.2:8000': it can never be admitted; send at most 8 prompts × n per request",
	}, got)
	assert.False(t, got.Retryable)
	assert.Zero(t, got.RetryAfterSecs)
}
