package policy

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/smg-go/smg/domain/worker"
)

// Assignment modes for manual (--assignment-mode, smg-spec.md §5.9): how a key without a
// usable sticky worker is assigned.
const (
	AssignRandom   = "random"    // uniform among candidates (manual's default)
	AssignMinLoad  = "min_load"  // fewest in-flight requests, ties random
	AssignMinGroup = "min_group" // fewest active routing keys (Options.ActiveKeys), ties random
	AssignDelegate = "delegate"  // for manual alone behaves as min_load
)

// Load metrics (--load-metric): what power_of_two and least_load compare.
const (
	LoadRequests = "requests" // in-flight legs on the worker (the default, SMG's behaviour)
	LoadTokens   = "tokens"   // in-flight prompt + expected decode tokens on the worker
)

// Observer receives the policy metrics the spec names (smg-spec.md §5.5, §5.7–§5.9, §7.3).
// The Prometheus adapter implements it; a nil Observer in Options disables metrics. Methods
// are called on the selection path and must be fast and safe for concurrent use.
type Observer interface {
	// Branch counts one decision: policy is the policy name (wire.Policy*), branch a
	// wire.Branch* value. Maps to smg_<policy>_policy_branch_total{branch}.
	Branch(policy, branch string)
	// TreeSize reports cache_aware's radix tree size for a model in characters (UTF-8 bytes)
	// after each eviction pass and worker removal. Maps to smg_cache_tree_chars{model}.
	TreeSize(model string, chars int)
}

// LoadReport is one engine load report for a worker, aggregated over its DP ranks
// (smg-spec.md §5.4 and §3.8 /get_loads). No engine reports are polled yet; the field set is
// what least_load and power_of_two score with once a load monitor supplies them.
type LoadReport struct {
	// Seq identifies the report; a change tells least_load a fresh report arrived, which
	// resets the tokens and requests it credited to the worker since the previous one.
	Seq uint64
	// WaitingReqs is the engine's waiting-queue length (requests).
	WaitingReqs int
	// WaitingUncachedTokens is the uncached prompt tokens waiting (tokens); 0 if unknown.
	WaitingUncachedTokens int
	// GenThroughput is the generation throughput (tokens/s); 0 if unknown.
	GenThroughput float64
	// TokenUsage is the mean KV-cache token usage over DP ranks, in [0, 1].
	TokenUsage float64
}

// LoadSource returns the latest engine load report for w, or false when there is none. It is
// called for every candidate on every least_load / power_of_two pick and must be fast and
// safe for concurrent use. A nil LoadSource means "no reports": both policies then score a
// worker by its in-flight count (worker.Live.Load), i.e. join-shortest-queue.
type LoadSource func(w *worker.Live) (LoadReport, bool)

// Options carries every tuning value of the policies, with SMG's CLI defaults from
// DefaultOptions (smg-spec.md §5, §8.2). Both legs take the same Options (seed "Per-Phase
// Policies"). Fields a policy does not use are ignored by it.
type Options struct {
	// CacheThreshold (--cache-threshold, 0.3): cache_aware keeps a prefix match only when
	// matched/total characters is strictly above it. [0, 1].
	CacheThreshold float64
	// BalanceAbsThreshold (--balance-abs-threshold, 64 requests): cache_aware's spill gate and
	// bucket's imbalance test (chars). >= 0.
	BalanceAbsThreshold int
	// BalanceRelThreshold (--balance-rel-threshold, 1.5): the relative half of the same
	// tests. >= 1.
	BalanceRelThreshold float64
	// EvictionInterval (--eviction-interval, 120 s): how often the app should call
	// Evicter.Evict. The policies do not run timers themselves. > 0.
	EvictionInterval time.Duration
	// MaxTreeSize (--max-tree-size, 67108864 chars): cache_aware evicts each worker's
	// (tenant's) share of a model's tree down to this many characters (UTF-8 bytes). > 0.
	MaxTreeSize int
	// PrefixTokenCount (--prefix-token-count, 256 tokens): prefix_hash hashes the first
	// 4 × PrefixTokenCount characters of the text when there is no routing key. > 0.
	PrefixTokenCount int
	// PrefixHashLoadFactor (--prefix-hash-load-factor, 1.25): prefix_hash accepts a ring
	// target when its load <= max(avg × factor, avg + PrefixHashBalanceAbsThreshold). >= 1.
	PrefixHashLoadFactor float64
	// PrefixHashBalanceAbsThreshold (--prefix-hash-balance-abs-threshold, 10 requests). >= 0.
	PrefixHashBalanceAbsThreshold int
	// VirtualNodes is the number of ring positions per worker URL for consistent_hashing and
	// prefix_hash (150, smg-spec.md §5.7). > 0.
	VirtualNodes int
	// MaxIdle (--max-idle-secs, 14400 s): manual's sticky keys expire after this long
	// without use; passed as the StickyStore TTL and refreshed on every hit. > 0.
	MaxIdle time.Duration
	// AssignmentMode (--assignment-mode, "random" for manual): one of the Assign* values.
	AssignmentMode string
	// StickyTimeout bounds each StickyStore call made during a manual pick (default 50 ms);
	// past it the pick falls back to a fresh assignment. > 0.
	StickyTimeout time.Duration
	// LeastLoadKVPressureWeight (--least-load-kv-pressure-weight, 0.15). Finite, >= 0.
	LeastLoadKVPressureWeight float64
	// LeastLoadDefaultThroughput (--least-load-default-throughput, 2000 tokens/s). Finite, > 0.
	LeastLoadDefaultThroughput float64
	// LeastLoadMeanPrefillTokens (--least-load-mean-prefill-tokens, 1024 tokens). >= 1.
	LeastLoadMeanPrefillTokens int
	// LeastLoadMaxWaitingRequests (--least-load-max-waiting-requests, 0 = off): least_load
	// drops workers whose reported waiting requests plus picks since that report reach it.
	LeastLoadMaxWaitingRequests int
	// LoadMetric (--load-metric, "requests"): what power_of_two and least_load count as a
	// worker's gateway-side load: LoadRequests (in-flight legs, worker.Live.Load) or
	// LoadTokens (in-flight prompt + expected decode tokens, worker.Live.TokenLoad). Engine
	// load reports, when a LoadSource supplies them, are scored the same either way.
	LoadMetric string
	// BucketAdjustInterval is bucket's sliding window and range-recompute period (5 s, the
	// value SMG's CLI hardcodes; smg-spec.md §5.6). >= 1 s.
	BucketAdjustInterval time.Duration

	// KVOverlapWeight (--kv-overlap-weight, DefaultKVOverlapWeight): in cache_aware's
	// event-driven cost model, how many in-flight requests a worker holding the whole
	// prompt's prefix is worth (a half prefix is worth half). Finite, >= 0.
	KVOverlapWeight float64

	// KVPrefixes is the engines' KV-event view cache_aware scores with when token ids are
	// known; nil keeps cache_aware on its approximate tree alone.
	KVPrefixes KVPrefixes
	// Sticky is manual's sticky-key store; required by manual, ignored by the rest.
	Sticky StickyStore
	// Loads supplies engine load reports to least_load and power_of_two; nil = in-flight only.
	Loads LoadSource
	// ActiveKeys returns the number of routing keys active on w, for AssignMinGroup; nil
	// makes min_group behave as min_load.
	ActiveKeys func(w *worker.Live) int
	// Observer receives branch counts and tree sizes; nil disables them.
	Observer Observer
	// Now is the clock bucket uses for its window; nil = time.Now.
	Now func() time.Time
}

// DefaultOptions returns SMG's CLI defaults (smg-spec.md §5.3–§5.9, §8.2) with no sticky
// store, load source or observer.
func DefaultOptions() Options {
	return Options{
		CacheThreshold:                0.3,
		BalanceAbsThreshold:           64,
		BalanceRelThreshold:           1.5,
		EvictionInterval:              120 * time.Second,
		MaxTreeSize:                   67108864,
		PrefixTokenCount:              256,
		PrefixHashLoadFactor:          1.25,
		PrefixHashBalanceAbsThreshold: 10,
		VirtualNodes:                  150,
		MaxIdle:                       14400 * time.Second,
		AssignmentMode:                AssignRandom,
		StickyTimeout:                 50 * time.Millisecond,
		LeastLoadKVPressureWeight:     0.15,
		LeastLoadDefaultThroughput:    2000,
		LeastLoadMeanPrefillTokens:    1024,
		LeastLoadMaxWaitingRequests:   0,
		BucketAdjustInterval:          5 * time.Second,
		KVOverlapWeight:               DefaultKVOverlapWeight,
		LoadMetric:                    LoadRequests,
	}
}

// ErrInvalidOptions is wrapped by Validate's errors.
var ErrInvalidOptions = errors.New("invalid policy option")

// OptionError is Validate's error: the flag (or setting) at fault and why. It wraps
// ErrInvalidOptions; its text is "invalid policy option: <flag> <reason>".
type OptionError struct {
	Flag, Reason string
}

// Error implements error.
func (e *OptionError) Error() string {
	return ErrInvalidOptions.Error() + ": " + e.Flag + " " + e.Reason
}

// Unwrap returns ErrInvalidOptions.
func (e *OptionError) Unwrap() error { return ErrInvalidOptions }

// Validate checks every tuning value against the ranges in its field doc and returns the
// first violation as one line naming the flag, e.g.
// "invalid policy option: --cache-threshold must be between 0 and 1 (got 1.5)".
func (o Options) Validate() error {
	bad := func(flag, format string, args ...any) error {
		return &OptionError{Flag: flag, Reason: fmt.Sprintf(format, args...)}
	}
	finite := func(f float64) bool { return !math.IsNaN(f) && !math.IsInf(f, 0) }
	switch {
	case !finite(o.CacheThreshold) || o.CacheThreshold < 0 || o.CacheThreshold > 1:
		return bad("--cache-threshold", "must be between 0 and 1 (got %g)", o.CacheThreshold)
	case o.BalanceAbsThreshold < 0:
		return bad("--balance-abs-threshold", "must be 0 or more (got %d)", o.BalanceAbsThreshold)
	case !finite(o.BalanceRelThreshold) || o.BalanceRelThreshold < 1:
		return bad("--balance-rel-threshold", "must be 1 or more (got %g)", o.BalanceRelThreshold)
	case o.EvictionInterval <= 0:
		return bad("--eviction-interval", "must be more than 0 seconds (got %s)", o.EvictionInterval)
	case o.MaxTreeSize <= 0:
		return bad("--max-tree-size", "must be more than 0 (got %d)", o.MaxTreeSize)
	case o.PrefixTokenCount <= 0:
		return bad("--prefix-token-count", "must be more than 0 (got %d)", o.PrefixTokenCount)
	case !finite(o.PrefixHashLoadFactor) || o.PrefixHashLoadFactor < 1:
		return bad("--prefix-hash-load-factor", "must be 1 or more (got %g)", o.PrefixHashLoadFactor)
	case o.PrefixHashBalanceAbsThreshold < 0:
		return bad("--prefix-hash-balance-abs-threshold", "must be 0 or more (got %d)", o.PrefixHashBalanceAbsThreshold)
	case o.VirtualNodes <= 0:
		return bad("virtual nodes", "must be more than 0 (got %d)", o.VirtualNodes)
	case o.MaxIdle <= 0:
		return bad("--max-idle-secs", "must be more than 0 seconds (got %s)", o.MaxIdle)
	case o.AssignmentMode != AssignRandom && o.AssignmentMode != AssignMinLoad &&
		o.AssignmentMode != AssignMinGroup && o.AssignmentMode != AssignDelegate:
		return bad("--assignment-mode", "must be random, min_load, min_group or delegate (got %q)", o.AssignmentMode)
	case o.StickyTimeout <= 0:
		return bad("sticky timeout", "must be more than 0 (got %s)", o.StickyTimeout)
	case !finite(o.LeastLoadKVPressureWeight) || o.LeastLoadKVPressureWeight < 0:
		return bad("--least-load-kv-pressure-weight", "must be 0 or more (got %g)", o.LeastLoadKVPressureWeight)
	case !finite(o.LeastLoadDefaultThroughput) || o.LeastLoadDefaultThroughput <= 0:
		return bad("--least-load-default-throughput", "must be more than 0 tokens/s (got %g)", o.LeastLoadDefaultThroughput)
	case o.LeastLoadMeanPrefillTokens < 1:
		return bad("--least-load-mean-prefill-tokens", "must be 1 or more tokens (got %d)", o.LeastLoadMeanPrefillTokens)
	case o.LeastLoadMaxWaitingRequests < 0:
		return bad("--least-load-max-waiting-requests", "must be 0 (off) or more (got %d)", o.LeastLoadMaxWaitingRequests)
	case !finite(o.KVOverlapWeight) || o.KVOverlapWeight < 0:
		return bad("--kv-overlap-weight", "must be 0 or more (got %g)", o.KVOverlapWeight)
	case o.LoadMetric != LoadRequests && o.LoadMetric != LoadTokens:
		return bad("--load-metric", "must be requests or tokens (got %q)", o.LoadMetric)
	case o.BucketAdjustInterval < time.Second:
		return bad("bucket adjust interval", "must be at least 1s (got %s)", o.BucketAdjustInterval)
	}
	return nil
}

func (o Options) now() time.Time {
	if o.Now != nil {
		return o.Now()
	}
	return time.Now()
}

// observe is a nil-safe wrapper around an Observer.
type observe struct{ o Observer }

func (b observe) branch(policy, branch string) {
	if b.o != nil {
		b.o.Branch(policy, branch)
	}
}

func (b observe) treeSize(model string, chars int) {
	if b.o != nil {
		b.o.TreeSize(model, chars)
	}
}
