package metrics_test

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/adapters/metrics"
)

func TestPolicyObserverSeries(t *testing.T) {
	t.Parallel()
	reg := metrics.NewRegistry()
	o, err := metrics.NewPolicyObserver(reg)
	require.NoError(t, err)
	o.Branch("manual", "hit")
	o.Branch("manual", "hit")
	o.Branch("consistent_hashing", "key_routed")
	o.TreeSize("m1", 1234)

	want := `
# HELP smg_manual_policy_branch_total Decisions of the manual routing policy by branch.
# TYPE smg_manual_policy_branch_total counter
smg_manual_policy_branch_total{branch="hit"} 2
# HELP smg_consistent_hashing_policy_branch_total Decisions of the consistent_hashing routing policy by branch.
# TYPE smg_consistent_hashing_policy_branch_total counter
smg_consistent_hashing_policy_branch_total{branch="key_routed"} 1
# HELP smg_cache_tree_chars cache_aware radix tree size per model, in characters (UTF-8 bytes).
# TYPE smg_cache_tree_chars gauge
smg_cache_tree_chars{model="m1"} 1234
`
	assert.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(want),
		"smg_manual_policy_branch_total", "smg_consistent_hashing_policy_branch_total", "smg_cache_tree_chars"))
}
