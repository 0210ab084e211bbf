package policies_test

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/app/config"
	"github.com/smg-go/smg/domain/wire"
)

// Issue #7: each leg runs its own round_robin instance with its own rotation. With 2
// prefills and 3 decodes, 12 sequential requests give 6/6 prefills and 4/4/4 decodes, the
// prefill strictly alternating and the decode cycling with period 3, so all 6 pairs occur
// twice. One rotation shared by both legs (advanced twice per request) would send every
// request to the same prefill.
func TestRoundRobinRotatesEachLegIndependently(t *testing.T) {
	t.Parallel()
	f := sglangFleet(t, 2, 3, func(c *config.Config) {
		c.Policy = "cache_aware" // both legs set explicitly below: --policy is not used
		c.PrefillPolicy, c.DecodePolicy = "round_robin", "round_robin"
	}, nil)
	const n = 12
	var ps, ds []int
	pairs := map[[2]int]int{}
	for i := range n {
		p, d := used(t, f, generate(fmt.Sprintf("round robin %d", i), 2), nil)
		ps, ds = append(ps, p), append(ds, d)
		pairs[[2]int{p, d}]++
	}
	for i := 1; i < n; i++ {
		assert.NotEqual(t, ps[i-1], ps[i], "prefill alternates: %v", ps)
		if i >= 3 {
			assert.Equal(t, ds[i-3], ds[i], "decode cycles with period 3: %v", ds)
		}
	}
	assert.ElementsMatch(t, []int{ds[0], ds[1], ds[2]}, []int{0, 1, 2}, "each decode once per cycle: %v", ds)
	assert.Len(t, pairs, 6, "every prefill meets every decode: %v", pairs)
	for pair, c := range pairs {
		assert.Equal(t, 2, c, "pair %v", pair)
	}
	for i, p := range f.Prefills {
		assert.Equal(t, int64(n/2), p.Stats().Requests, "prefill %d", i)
	}
	for i, d := range f.Decodes {
		assert.Equal(t, int64(n/3), d.Stats().Requests, "decode %d", i)
	}
}

// Issue #7: manual sticks per leg through the x-smg-routing-key header. Prefill manual with
// a round_robin decode: every request of a key lands on that key's prefill while the decode
// rotates. Both legs manual: every request of a key lands on the same prefill and the same
// decode. Keys spread over more than one worker, and a request without a key is still
// served (no_routing_id branch).
func TestManualSticksPerLegByRoutingKey(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name         string
		decodePolicy string
	}{
		{"prefill manual, decode round_robin", "round_robin"},
		{"both legs manual", "manual"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := sglangFleet(t, 3, 3, func(c *config.Config) {
				c.PrefillPolicy, c.DecodePolicy = "manual", tc.decodePolicy
			}, nil)
			const keys, rounds = 8, 4
			prefillOf, decodeOf := map[string]int{}, map[string]map[int]bool{}
			decodesSeen := map[int]bool{}
			for r := range rounds {
				for k := range keys {
					key := fmt.Sprintf("session-%d", k)
					hdr := http.Header{wire.HeaderRoutingKey: []string{key}}
					p, d := used(t, f, generate(fmt.Sprintf("turn %d of %s", r, key), 2), hdr)
					if r == 0 {
						prefillOf[key], decodeOf[key] = p, map[int]bool{}
					}
					assert.Equal(t, prefillOf[key], p, "%s round %d: prefill pin", key, r)
					decodeOf[key][d] = true
					decodesSeen[d] = true
				}
			}
			distinct := map[int]bool{}
			for _, p := range prefillOf {
				distinct[p] = true
			}
			assert.Greater(t, len(distinct), 1, "keys spread over the prefills: %v", prefillOf)
			for key, ds := range decodeOf {
				if tc.decodePolicy == "manual" {
					assert.Len(t, ds, 1, "%s: decode pin", key)
				}
			}
			if tc.decodePolicy == "round_robin" {
				assert.Len(t, decodesSeen, 3, "the decode leg kept rotating")
			}
			p, d := used(t, f, generate("no routing key", 2), nil)
			assert.GreaterOrEqual(t, p, 0)
			assert.GreaterOrEqual(t, d, 0)
			require.Equal(t, int64(keys*rounds+1), counts(f)[0]+counts(f)[1]+counts(f)[2])
		})
	}
}
