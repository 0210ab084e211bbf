package config

import (
	"time"

	"github.com/smg-go/smg/domain/policy"
)

// PolicyOptions maps the policy tuning flags onto policy.Options (smg-spec.md §8.2): both
// legs take the same values (seed "Per-Phase Policies"). The sticky store, load source and
// observer are left for the caller to set.
func (c Config) PolicyOptions() policy.Options {
	o := policy.DefaultOptions()
	o.CacheThreshold = c.CacheThreshold
	o.BalanceAbsThreshold = c.BalanceAbsThreshold
	o.BalanceRelThreshold = c.BalanceRelThreshold
	o.EvictionInterval = time.Duration(c.EvictionIntervalSecs) * time.Second
	o.MaxTreeSize = c.MaxTreeSize
	o.PrefixTokenCount = c.PrefixTokenCount
	o.PrefixHashLoadFactor = c.PrefixHashLoadFactor
	o.MaxIdle = time.Duration(c.MaxIdleSecs) * time.Second
	o.LeastLoadKVPressureWeight = c.LeastLoadKVPressureWeight
	o.LeastLoadDefaultThroughput = c.LeastLoadDefaultThroughput
	o.LeastLoadMeanPrefillTokens = c.LeastLoadMeanPrefillTokens
	o.LeastLoadMaxWaitingRequests = c.LeastLoadMaxWaitingReqs
	o.KVOverlapWeight = c.KVOverlapWeight
	o.LoadMetric = c.LoadMetric
	return o
}
