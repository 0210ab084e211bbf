package policy

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/smg-go/smg/domain/wire"
)

// The registry's errors; New and ValidateStartup wrap them with a one-line explanation.
var (
	// ErrUnknownPolicy: the name is not one of Names().
	ErrUnknownPolicy = errors.New("unknown policy")
	// ErrPolicyLeg: the policy may not route this leg (bucket on decode; anything but
	// random, round_robin or consistent_hashing on encode).
	ErrPolicyLeg = errors.New("policy not allowed on this leg")
	// ErrTooFewWorkers: power_of_two with fewer than two startup workers on its leg.
	ErrTooFewWorkers = errors.New("too few workers for policy")
	// ErrMissingStickyStore: manual built without Options.Sticky.
	ErrMissingStickyStore = errors.New("manual policy needs a sticky store")
)

// names lists the per-leg policies in the order the spec gives them (smg-spec.md §5.0, §8.1).
var names = []string{
	wire.PolicyRandom, wire.PolicyRoundRobin, wire.PolicyCacheAware, wire.PolicyPowerOfTwo,
	wire.PolicyLeastLoad, wire.PolicyPrefixHash, wire.PolicyConsistentHashing,
	wire.PolicyManual, wire.PolicyBucket,
}

// encodeNames are the policies --encode-policy accepts (smg-spec.md §8.1).
var encodeNames = []string{wire.PolicyRandom, wire.PolicyRoundRobin, wire.PolicyConsistentHashing}

// Names returns the accepted policy names (a fresh slice): random, round_robin, cache_aware,
// power_of_two, least_load, prefix_hash, consistent_hashing, manual, bucket.
func Names() []string { return slices.Clone(names) }

// checkLeg validates name for leg: known, and allowed on that leg.
func checkLeg(name string, leg Leg) error {
	if !slices.Contains(names, name) {
		return fmt.Errorf("%w %q for the %s leg (valid: %s)", ErrUnknownPolicy, name, leg, strings.Join(names, ", "))
	}
	switch {
	case leg == LegDecode && name == wire.PolicyBucket:
		return fmt.Errorf("%w: bucket is a prefill-only policy and cannot route the decode leg", ErrPolicyLeg)
	case leg == LegEncode && !slices.Contains(encodeNames, name):
		return fmt.Errorf("%w: the encode leg accepts %s (got %q)", ErrPolicyLeg, strings.Join(encodeNames, ", "), name)
	}
	return nil
}

// New returns a fresh instance of policy name for leg; every call returns independent state,
// so build one per leg. Errors (one line each): ErrUnknownPolicy listing the valid names,
// ErrPolicyLeg for bucket on LegDecode (or a non-encode policy on LegEncode),
// ErrInvalidOptions from opts.Validate, ErrMissingStickyStore for manual without opts.Sticky.
func New(name string, leg Leg, opts Options) (Policy, error) {
	if err := checkLeg(name, leg); err != nil {
		return nil, err
	}
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	switch name {
	case wire.PolicyRandom:
		return Random{}, nil
	case wire.PolicyRoundRobin:
		return &RoundRobin{}, nil
	case wire.PolicyPowerOfTwo:
		return &PowerOfTwo{loads: opts.Loads, metric: opts.LoadMetric}, nil
	case wire.PolicyLeastLoad:
		return newLeastLoad(opts), nil
	case wire.PolicyCacheAware:
		return newCacheAware(opts), nil
	case wire.PolicyPrefixHash:
		return newPrefixHash(opts), nil
	case wire.PolicyConsistentHashing:
		return newConsistentHashing(opts), nil
	case wire.PolicyManual:
		if opts.Sticky == nil {
			return nil, fmt.Errorf("%w (Options.Sticky is nil)", ErrMissingStickyStore)
		}
		return newManual(leg, opts), nil
	default: // wire.PolicyBucket; checkLeg rejected everything else
		return newBucket(opts), nil
	}
}

// CheckLeg checks that name is a known policy allowed on leg, without the start-up worker
// count rule: ErrUnknownPolicy listing the valid names, ErrPolicyLeg for bucket on LegDecode
// (or a non-encode policy on LegEncode). Start-up validation uses it for a leg whose workers
// all arrive later (POST /workers, service discovery), where ValidateStartup's worker count
// does not apply.
func CheckLeg(name string, leg Leg) error { return checkLeg(name, leg) }

// ValidateStartup checks name for leg at start-up, given the number of workers configured on
// that leg on the command line (--prefill / --decode URLs; for --policy on a regular router,
// all --worker-urls). It returns the New name/leg errors, and ErrTooFewWorkers when name is
// power_of_two and startupWorkers < 2 (smg-spec.md §5.3; seed "Per-Phase Policies"). The
// caller skips it with service discovery or --enable-igw, where workers arrive later.
func ValidateStartup(name string, leg Leg, startupWorkers int) error {
	if err := checkLeg(name, leg); err != nil {
		return err
	}
	if name == wire.PolicyPowerOfTwo && startupWorkers < 2 {
		return fmt.Errorf("%w: power_of_two needs at least 2 %s workers at startup (got %d)", ErrTooFewWorkers, leg, startupWorkers)
	}
	return nil
}
