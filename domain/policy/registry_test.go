package policy_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/domain/policy"
)

func TestNamesAreTheNineSpecPolicies(t *testing.T) {
	t.Parallel()
	assert.Equal(t, []string{
		"random", "round_robin", "cache_aware", "power_of_two", "least_load",
		"prefix_hash", "consistent_hashing", "manual", "bucket",
	}, policy.Names())
	n := policy.Names()
	n[0] = "mutated"
	assert.Equal(t, "random", policy.Names()[0], "Names returns a copy")
}

func TestNewBuildsEveryPolicyOnPrefill(t *testing.T) {
	t.Parallel()
	needsText := map[string]bool{"cache_aware": true, "prefix_hash": true, "bucket": true}
	o := policy.DefaultOptions()
	o.Sticky = newFakeStore()
	for _, name := range policy.Names() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			p, err := policy.New(name, policy.LegPrefill, o)
			require.NoError(t, err)
			assert.Equal(t, name, p.Name())
			assert.Equal(t, needsText[name], p.NeedsText())
			assert.Equal(t, -1, p.Select(nil, &policy.Request{}), "no candidates, no pick")
			ws := workers(3)
			i := p.Select(ws, &policy.Request{Model: "m", Text: "hello", RoutingKey: "k"})
			assert.True(t, i >= 0 && i < 3, "index %d in range", i)
		})
	}
}

func TestNewErrors(t *testing.T) {
	t.Parallel()
	withStore := policy.DefaultOptions()
	withStore.Sticky = newFakeStore()
	badThreshold := withStore
	badThreshold.CacheThreshold = 1.5
	badMode := withStore
	badMode.AssignmentMode = "sticky"
	cases := []struct {
		name, policy string
		leg          policy.Leg
		opts         policy.Options
		err          error
		msg          string
	}{
		{"unknown name lists the valid ones", "fastest", policy.LegPrefill, withStore, policy.ErrUnknownPolicy,
			`unknown policy "fastest" for the prefill leg (valid: random, round_robin, cache_aware, power_of_two, least_load, prefix_hash, consistent_hashing, manual, bucket)`},
		{"passthrough is not a leg policy", "passthrough", policy.LegDecode, withStore, policy.ErrUnknownPolicy, ""},
		{"bucket refused on decode", "bucket", policy.LegDecode, withStore, policy.ErrPolicyLeg,
			"policy not allowed on this leg: bucket is a prefill-only policy and cannot route the decode leg"},
		{"encode takes only three", "cache_aware", policy.LegEncode, withStore, policy.ErrPolicyLeg,
			`policy not allowed on this leg: the encode leg accepts random, round_robin, consistent_hashing (got "cache_aware")`},
		{"manual needs a store", "manual", policy.LegDecode, policy.DefaultOptions(), policy.ErrMissingStickyStore, ""},
		{"invalid threshold", "cache_aware", policy.LegPrefill, badThreshold, policy.ErrInvalidOptions,
			"invalid policy option: --cache-threshold must be between 0 and 1 (got 1.5)"},
		{"invalid assignment mode", "round_robin", policy.LegPrefill, badMode, policy.ErrInvalidOptions,
			`invalid policy option: --assignment-mode must be random, min_load, min_group or delegate (got "sticky")`},
		{"empty options are invalid", "random", policy.LegPrefill, policy.Options{}, policy.ErrInvalidOptions, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p, err := policy.New(tc.policy, tc.leg, tc.opts)
			require.ErrorIs(t, err, tc.err)
			assert.Nil(t, p)
			if tc.msg != "" {
				assert.Equal(t, tc.msg, err.Error())
			}
		})
	}
}

func TestNewAllowsBucketOnPrefillAndConsistentHashingOnEncode(t *testing.T) {
	t.Parallel()
	_, err := policy.New("bucket", policy.LegPrefill, policy.DefaultOptions())
	require.NoError(t, err)
	_, err = policy.New("consistent_hashing", policy.LegEncode, policy.DefaultOptions())
	require.NoError(t, err)
}

func TestValidateStartup(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, policy string
		leg          policy.Leg
		workers      int
		err          error
		msg          string
	}{
		{"power_of_two with two prefill workers", "power_of_two", policy.LegPrefill, 2, nil, ""},
		{"power_of_two with one decode worker", "power_of_two", policy.LegDecode, 1, policy.ErrTooFewWorkers,
			"too few workers for policy: power_of_two needs at least 2 decode workers at startup (got 1)"},
		{"power_of_two with no prefill worker", "power_of_two", policy.LegPrefill, 0, policy.ErrTooFewWorkers,
			"too few workers for policy: power_of_two needs at least 2 prefill workers at startup (got 0)"},
		{"least_load with one worker", "least_load", policy.LegDecode, 1, nil, ""},
		{"bucket on decode", "bucket", policy.LegDecode, 4, policy.ErrPolicyLeg, ""},
		{"bucket on prefill", "bucket", policy.LegPrefill, 1, nil, ""},
		{"unknown", "nope", policy.LegDecode, 4, policy.ErrUnknownPolicy, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := policy.ValidateStartup(tc.policy, tc.leg, tc.workers)
			if tc.err == nil {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, tc.err)
			if tc.msg != "" {
				assert.Equal(t, tc.msg, err.Error())
			}
		})
	}
}

func TestDefaultOptionsAreSMGDefaults(t *testing.T) {
	t.Parallel()
	o := policy.DefaultOptions()
	require.NoError(t, o.Validate())
	assert.Equal(t, 0.3, o.CacheThreshold)
	assert.Equal(t, 64, o.BalanceAbsThreshold)
	assert.Equal(t, 1.5, o.BalanceRelThreshold)
	assert.Equal(t, 67108864, o.MaxTreeSize)
	assert.Equal(t, 256, o.PrefixTokenCount)
	assert.Equal(t, 1.25, o.PrefixHashLoadFactor)
	assert.Equal(t, 10, o.PrefixHashBalanceAbsThreshold)
	assert.Equal(t, 150, o.VirtualNodes)
	assert.Equal(t, "random", o.AssignmentMode)
	assert.Equal(t, 0.15, o.LeastLoadKVPressureWeight)
	assert.Equal(t, 2000.0, o.LeastLoadDefaultThroughput)
	assert.Equal(t, 1024, o.LeastLoadMeanPrefillTokens)
	assert.Equal(t, 0, o.LeastLoadMaxWaitingRequests)
	assert.Equal(t, "2m0s", o.EvictionInterval.String())
	assert.Equal(t, "4h0m0s", o.MaxIdle.String())
	assert.Equal(t, "5s", o.BucketAdjustInterval.String())
}
