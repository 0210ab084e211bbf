package health_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/smg-go/smg/app/health"
	"github.com/smg-go/smg/domain/worker"
)

func TestTransition(t *testing.T) {
	t.Parallel()
	th := health.Thresholds{Success: 2, Failure: 3}
	type step struct {
		ok   bool
		want worker.Status
	}
	tests := []struct {
		name  string
		start worker.Status
		steps []step
	}{
		{"pending needs success_threshold successes", worker.StatusPending, []step{
			{true, worker.StatusPending}, {true, worker.StatusReady}}},
		{"a failure resets the success streak", worker.StatusPending, []step{
			{true, worker.StatusPending}, {false, worker.StatusPending}, {true, worker.StatusPending}, {true, worker.StatusReady}}},
		{"ready turns not_ready after failure_threshold failures", worker.StatusReady, []step{
			{false, worker.StatusReady}, {false, worker.StatusReady}, {false, worker.StatusNotReady}}},
		{"a success resets the failure streak", worker.StatusReady, []step{
			{false, worker.StatusReady}, {false, worker.StatusReady}, {true, worker.StatusReady},
			{false, worker.StatusReady}, {false, worker.StatusReady}, {false, worker.StatusNotReady}}},
		{"not_ready fails after 3x failure_threshold consecutive failures", worker.StatusReady, []step{
			{false, worker.StatusReady}, {false, worker.StatusReady}, {false, worker.StatusNotReady},
			{false, worker.StatusNotReady}, {false, worker.StatusNotReady}, {false, worker.StatusNotReady},
			{false, worker.StatusNotReady}, {false, worker.StatusNotReady}, {false, worker.StatusFailed}}},
		{"not_ready recovers after success_threshold successes", worker.StatusNotReady, []step{
			{true, worker.StatusNotReady}, {true, worker.StatusReady}}},
		{"failed is terminal", worker.StatusFailed, []step{
			{true, worker.StatusFailed}, {true, worker.StatusFailed}, {true, worker.StatusFailed}}},
		{"draining is left alone", worker.StatusDraining, []step{
			{false, worker.StatusDraining}, {false, worker.StatusDraining}, {false, worker.StatusDraining}, {true, worker.StatusDraining}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s, c := tc.start, health.Counters{}
			for i, st := range tc.steps {
				s, c = health.Transition(s, c, st.ok, th)
				assert.Equal(t, st.want, s, "after probe %d (ok=%v)", i+1, st.ok)
			}
		})
	}
}

func TestTransitionPendingGivesUpAfterTenTimesFailureThreshold(t *testing.T) {
	t.Parallel()
	th := health.Thresholds{Success: 2, Failure: 3}
	s, c := worker.StatusPending, health.Counters{}
	for i := 1; i < 30; i++ {
		s, c = health.Transition(s, c, false, th)
		assert.Equal(t, worker.StatusPending, s, "probe %d", i)
	}
	s, c = health.Transition(s, c, false, th)
	assert.Equal(t, worker.StatusFailed, s, "probe 30 = 10x failure_threshold")
	assert.Equal(t, 30, c.PendingProbes)
}

func TestTransitionZeroThresholdsCountAsOne(t *testing.T) {
	t.Parallel()
	s, _ := health.Transition(worker.StatusPending, health.Counters{}, true, health.Thresholds{})
	assert.Equal(t, worker.StatusReady, s)
	s, _ = health.Transition(worker.StatusReady, health.Counters{}, false, health.Thresholds{})
	assert.Equal(t, worker.StatusNotReady, s)
}
