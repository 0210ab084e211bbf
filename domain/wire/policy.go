package wire

// Routing policy names: the values of --policy, --prefill-policy and --decode-policy and the
// `policy` label of smg_worker_selection_total (smg-spec.md §5.0, §8.1; seed "Per-Phase
// Policies"). --encode-policy accepts random, round_robin and consistent_hashing.
const (
	PolicyRandom            = "random"
	PolicyRoundRobin        = "round_robin"
	PolicyCacheAware        = "cache_aware"
	PolicyPowerOfTwo        = "power_of_two"
	PolicyLeastLoad         = "least_load"
	PolicyPrefixHash        = "prefix_hash"
	PolicyConsistentHashing = "consistent_hashing"
	PolicyManual            = "manual"
	PolicyBucket            = "bucket"
)

// `branch` label values of the policy branch counters (smg-spec.md §5.7–§5.9, §7.3):
// smg_manual_policy_branch_total, smg_consistent_hashing_policy_branch_total and
// smg_prefix_hash_policy_branch_total. BranchStoreError (manual: the sticky store failed and
// a fresh pick was made) and the cache_aware values are smg additions so that every silent
// fallback is counted.
const (
	BranchNoHealthyWorkers  = "no_healthy_workers"
	BranchRoutingKeyHit     = "routing_key_hit"
	BranchRandomFallback    = "random_fallback"
	BranchNoRoutingKey      = "no_routing_key"
	BranchRingHit           = "ring_hit"
	BranchLoadBalanceWalk   = "load_balance_walk"
	BranchFallbackLeastLoad = "fallback_least_load"
	BranchOccupiedHit       = "occupied_hit"
	BranchOccupiedMiss      = "occupied_miss"
	BranchVacant            = "vacant"
	BranchNoRoutingID       = "no_routing_id"
	BranchStoreError        = "store_error"
	BranchCacheHit          = "cache_hit"   // cache_aware: match above --cache-threshold, kept
	BranchCacheSpill        = "cache_spill" // cache_aware: match kept, but the spill gate moved it
	BranchCacheMiss         = "cache_miss"  // cache_aware: match at or below threshold, min-load
)
