package metrics

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/smg-go/smg/domain/policy"
)

// NameCacheTreeChars is cache_aware's radix-tree size per model (smg-spec.md §7.3).
const NameCacheTreeChars = "smg_cache_tree_chars"

// PolicyObserver is the Prometheus policy.Observer: one counter
// smg_<policy>_policy_branch_total{branch} per policy that reports branches (manual,
// consistent_hashing and prefix_hash as smg-spec.md §7.3 names them; cache_aware's
// cache_hit/cache_spill/cache_miss likewise) and the gauge smg_cache_tree_chars{model}.
// Counters are created on a policy's first branch. Safe for concurrent use.
type PolicyObserver struct {
	reg      *prometheus.Registry
	treeSize *prometheus.GaugeVec

	mu       sync.RWMutex
	branches map[string]*prometheus.CounterVec
}

var _ policy.Observer = (*PolicyObserver)(nil)

// NewPolicyObserver registers smg_cache_tree_chars on reg and returns the observer.
func NewPolicyObserver(reg *prometheus.Registry) (*PolicyObserver, error) {
	g := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: NameCacheTreeChars, Help: "cache_aware radix tree size per model, in characters (UTF-8 bytes).",
	}, []string{LabelModel})
	if err := reg.Register(g); err != nil {
		return nil, err
	}
	return &PolicyObserver{reg: reg, treeSize: g, branches: map[string]*prometheus.CounterVec{}}, nil
}

// Branch increments smg_<policyName>_policy_branch_total{branch}.
func (o *PolicyObserver) Branch(policyName, branch string) {
	o.mu.RLock()
	c := o.branches[policyName]
	o.mu.RUnlock()
	if c == nil {
		o.mu.Lock()
		if c = o.branches[policyName]; c == nil {
			c = prometheus.NewCounterVec(prometheus.CounterOpts{
				Name: "smg_" + policyName + "_policy_branch_total",
				Help: "Decisions of the " + policyName + " routing policy by branch.",
			}, []string{"branch"})
			if err := o.reg.Register(c); err != nil {
				if are, ok := err.(prometheus.AlreadyRegisteredError); ok {
					c = are.ExistingCollector.(*prometheus.CounterVec)
				}
			}
			o.branches[policyName] = c
		}
		o.mu.Unlock()
	}
	c.WithLabelValues(branch).Inc()
}

// TreeSize sets smg_cache_tree_chars{model}.
func (o *PolicyObserver) TreeSize(model string, chars int) {
	o.treeSize.WithLabelValues(model).Set(float64(chars))
}
