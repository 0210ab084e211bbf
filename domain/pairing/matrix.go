package pairing

import "github.com/smg-go/smg/domain/worker"

// Group is a set of prefill workers with one Descriptor, hence the same compatible decodes.
// A Matrix hands out its groups read-only: callers must not modify the slices.
type Group struct {
	// Descriptor is the shared descriptor of Prefills.
	Descriptor Descriptor
	// Key is Key(Descriptor), the prefills' `pd_pairing` key.
	Key string
	// Prefills are the group's prefill workers, in registration order.
	Prefills []*worker.Live
	// Decodes are the decode workers compatible with the group, in registration order,
	// regardless of their health (availability is checked per request).
	Decodes []*worker.Live
}

// Matrix is the precomputed compatibility of a fleet's prefill and decode workers under one
// mode (seed "Prefill/Decode Pairing": "Compatibility is worked out when workers join or leave,
// not on every request"). It is immutable once built, so it can be shared between goroutines
// and swapped atomically when the fleet changes.
//
// Building groups workers by Descriptor: the cost is O(P + D + Gp·Gd + Gp·D) for P prefills,
// D decodes and Gp, Gd distinct prefill and decode descriptors (a handful in a real fleet).
// Reading it at request time touches only the prefill groups that have a compatible decode,
// so the number of incompatible workers does not add to the cost of a selection.
type Matrix struct {
	mode     Mode
	prefills []*worker.Live
	decodes  []*worker.Live
	groups   []Group
	pairable []Group
	dGroups  []Group              // decodes by descriptor (Decodes holds the members)
	byLive   map[*worker.Live]int // prefill -> index in groups
}

// NewMatrix computes the matrix of prefills × decodes under mode m. Workers of other roles are
// not filtered out: the caller passes the two role lists. The slices are kept, not copied (the
// store's ByRole snapshots are read-only); nil entries are skipped.
func NewMatrix(prefills, decodes []*worker.Live, m Mode) *Matrix {
	mx := &Matrix{mode: m, prefills: prefills, decodes: decodes,
		byLive: make(map[*worker.Live]int, len(prefills))}

	// Distinct decode descriptors, and each decode's class.
	dClass := make([]int, len(decodes))
	dIndex := map[Descriptor]int{}
	for i, l := range decodes {
		if l == nil {
			dClass[i] = -1
			continue
		}
		desc := Describe(l.Worker)
		c, ok := dIndex[desc]
		if !ok {
			c = len(mx.dGroups)
			dIndex[desc] = c
			mx.dGroups = append(mx.dGroups, Group{Descriptor: desc, Key: Key(desc)})
		}
		mx.dGroups[c].Decodes = append(mx.dGroups[c].Decodes, l)
		dClass[i] = c
	}

	pIndex := map[Descriptor]int{}
	for _, l := range prefills {
		if l == nil {
			continue
		}
		desc := Describe(l.Worker)
		g, ok := pIndex[desc]
		if !ok {
			g = len(mx.groups)
			pIndex[desc] = g
			mx.groups = append(mx.groups, Group{Descriptor: desc, Key: Key(desc)})
		}
		mx.groups[g].Prefills = append(mx.groups[g].Prefills, l)
		mx.byLive[l] = g
	}

	compat := make([]bool, len(mx.dGroups))
	for g := range mx.groups {
		for c := range mx.dGroups {
			compat[c], _ = Compatible(mx.groups[g].Descriptor, mx.dGroups[c].Descriptor, m)
		}
		for i, l := range decodes {
			if dClass[i] >= 0 && compat[dClass[i]] {
				mx.groups[g].Decodes = append(mx.groups[g].Decodes, l)
			}
		}
		if len(mx.groups[g].Decodes) > 0 {
			mx.pairable = append(mx.pairable, mx.groups[g])
		}
	}
	return mx
}

// Mode is the pairing mode the matrix was computed under.
func (mx *Matrix) Mode() Mode { return mx.mode }

// Prefills are the prefill workers the matrix was built from (read-only).
func (mx *Matrix) Prefills() []*worker.Live { return mx.prefills }

// Decodes are the decode workers the matrix was built from (read-only).
func (mx *Matrix) Decodes() []*worker.Live { return mx.decodes }

// Groups are all prefill groups, in the registration order of their first prefill, including
// groups without a compatible decode (read-only).
func (mx *Matrix) Groups() []Group { return mx.groups }

// Pairable are the prefill groups with at least one compatible decode, in the same order as
// Groups (read-only). A prefill outside them can never be chosen for a PD pair.
func (mx *Matrix) Pairable() []Group { return mx.pairable }

// CompatibleDecodes returns the decodes prefill p may pair with (read-only, registration
// order, regardless of health); nil when p has none or is not in the matrix.
func (mx *Matrix) CompatibleDecodes(p *worker.Live) []*worker.Live {
	g, ok := mx.byLive[p]
	if !ok {
		return nil
	}
	return mx.groups[g].Decodes
}

// Explain is the no_compatible_pd_pair explanation for the whole fleet of the matrix; see
// Explain. It is meaningful only when Pairable is empty.
func (mx *Matrix) Explain() string { return mx.ExplainWhere(nil) }

// ExplainWhere is Explain over the matrix's workers for which keep reports true (nil keeps
// all), typically the available workers serving the request's model. Combinations come in the
// matrix's group order (registration order of each descriptor's first worker, kept or not),
// each named by its first kept worker. It reuses the matrix's
// descriptors, so it costs O(P + D) keep calls plus O(Gp·Gd) comparisons and allocates
// nothing per worker: cheap enough for every failing request.
func (mx *Matrix) ExplainWhere(keep func(*worker.Live) bool) string {
	return explainGroups(filterGroups(mx.groups, keep, false), filterGroups(mx.dGroups, keep, true), mx.mode)
}

func filterGroups(gs []Group, keep func(*worker.Live) bool, decodes bool) []legGroup {
	out := make([]legGroup, 0, len(gs))
	for _, g := range gs {
		members := g.Prefills
		if decodes {
			members = g.Decodes
		}
		lg := legGroup{desc: g.Descriptor}
		for _, l := range members {
			if keep == nil || keep(l) {
				if lg.count == 0 {
					lg.first = l
				}
				lg.count++
			}
		}
		if lg.count > 0 {
			out = append(out, lg)
		}
	}
	return out
}
