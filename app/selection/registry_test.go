package selection_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/app/selection"
	"github.com/smg-go/smg/domain/pairing"
	"github.com/smg-go/smg/domain/policy"
	"github.com/smg-go/smg/domain/worker"
)

// The registry's policies behind the selector: whatever they prefer, only compatible pairs
// come out, and a prefill without a compatible decode is never chosen.
func TestSelectWithRegistryPolicies(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"round_robin", "random", "least_load", "power_of_two",
		"cache_aware", "prefix_hash", "consistent_hashing"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			st := &fakeStore{}
			for _, w := range []*worker.Live{
				vw("http://lonely:8000", worker.RolePrefill, "MoRIIOConnector", nil),
				vw("http://pn:8000", worker.RolePrefill, nixl, nil),
				vw("http://pm:8000", worker.RolePrefill, mooncake, nil),
				vw("http://dm:8000", worker.RoleDecode, mooncake, nil),
				vw("http://dn:8000", worker.RoleDecode, nixl, nil),
			} {
				require.NoError(t, st.Add(w))
			}
			pp, err := policy.New(name, policy.LegPrefill, policy.DefaultOptions())
			require.NoError(t, err)
			dp, err := policy.New(name, policy.LegDecode, policy.DefaultOptions())
			require.NoError(t, err)
			sel := selection.New(st, pairing.ModeStrict, pp, dp, nil)
			for i := range 40 {
				req := &policy.Request{Model: "m", Text: fmt.Sprintf("prompt %d", i%5), RoutingKey: fmt.Sprint(i)}
				p, d, release, err := sel.Select(req)
				require.NoError(t, err)
				assert.NotEqual(t, "http://lonely:8000", p.URL)
				ok, diffs := pairing.Compatible(pairing.Describe(p.Worker), pairing.Describe(d.Worker), pairing.ModeStrict)
				assert.True(t, ok, "%s -> %s: %v", p.URL, d.URL, diffs)
				release()
			}
		})
	}
}
