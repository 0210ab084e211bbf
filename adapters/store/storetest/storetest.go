// Package storetest is the contract suite for the shared-state ports (ports.SlotCounter,
// ports.StickyStore). Every adapter runs it from its own _test.go, so the in-memory and the
// Redis adapters are held to the same behaviour (style.md pattern 3).
//
// The suite needs real time for expiry: it sleeps for multiples of LeaseTTL and StickyTTL
// with margins of at least a quarter of them; failures are reported, never timed.
package storetest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

// LeaseTTL is the lease time a SlotCounter under test must be configured with.
const LeaseTTL = time.Second

// PollInterval is the Wait poll interval a SlotCounter under test must be configured with:
// long, so a Wait that returns early proves a wake-up rather than a poll.
const PollInterval = time.Minute

// hangGuard bounds every blocking step of the suite.
const hangGuard = 20 * time.Second

// Key returns a name unique to this run, for workers and sticky keys, e.g.
// "http://10.0.0.1:8000/worker-3fa9c1".
func Key(base string) string {
	return fmt.Sprintf("%s-%06x", base, rand.Uint32()&0xffffff)
}

func guard(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	t.Cleanup(cancel)
	return ctx
}
