package fleet

import (
	"fmt"
	"time"
)

// LivenessHeader is the header of the liveness benchmark's Markdown table (LivenessRow).
const LivenessHeader = "| case | requests | healthy median | under 2× it | over 15 s | worst | canaries on the culprit | culprit's breaker | healthy breakers moved |\n" +
	"|---|---|---|---|---|---|---|---|---|"

// LivenessRow is one line of the liveness benchmark's table: the case, its figures, the
// culprit's canary_requests counter and breaker state (closed, open, half_open), and the
// healthy workers' breakers as text (e.g. "0 of 3 moved").
func LivenessRow(name string, l Liveness, canaries int64, culprit, healthy string) string {
	return fmt.Sprintf("| %s | %d | %v | %d (%.1f %%) | %d | %v | %d | %s | %s |", name, l.Requests,
		l.Healthy.Round(time.Millisecond), l.Fast, 100*l.Share(), l.Slow, l.Worst.Round(10*time.Millisecond), canaries, culprit, healthy)
}

// BreakerState names a smg_worker_cb_state value (0 closed, 1 open, 2 half-open; -1 when
// the series is missing).
func BreakerState(v float64) string {
	switch v {
	case 0:
		return "closed"
	case 1:
		return "open"
	case 2:
		return "half_open"
	}
	return fmt.Sprintf("unknown (%v)", v)
}
