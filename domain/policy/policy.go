// Package policy holds the per-leg routing policies (seed "Per-Phase Policies";
// smg-spec.md §5). Each leg of a PD pair runs its own Policy instance, so stateful policies
// (round_robin, manual, cache_aware) keep separate state per leg.
package policy

import "github.com/smg-go/smg/domain/worker"

// Leg names the leg a policy instance serves; it namespaces sticky keys ("prefill:", "decode:").
type Leg string

// The legs.
const (
	LegPrefill Leg = "prefill"
	LegDecode  Leg = "decode"
	LegEncode  Leg = "encode"
	LegRegular Leg = "regular"
)

// Request is what a policy may look at. Text is filled only when NeedsText reports true for
// one of the request's policies (cache_aware, bucket), so other policies pay nothing for it.
type Request struct {
	// Model is the request's model id ("" when none).
	Model string
	// Text is the routing text (prompt or joined message contents), or "" when not extracted.
	Text string
	// RoutingKey is the value of the first configured routing-key header (x-smg-routing-key), or "".
	RoutingKey string
}

// Policy picks one worker among candidates for one leg.
type Policy interface {
	// Name is the policy's flag value, e.g. "round_robin"; used as the `policy` metric label.
	Name() string
	// NeedsText reports whether Select reads Request.Text.
	NeedsText() bool
	// Select returns the index in candidates of the chosen worker, or -1 when none fits.
	// candidates are all available (healthy, breaker closed) and non-empty. Select is called
	// concurrently and must be safe for that; it must not keep the slice.
	Select(candidates []*worker.Live, req *Request) int
}
