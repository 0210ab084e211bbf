package selection

import (
	"sync/atomic"

	"github.com/smg-go/smg/domain/pairing"
	"github.com/smg-go/smg/domain/policy"
	"github.com/smg-go/smg/domain/worker"
)

// maxViews bounds the cached views of one snapshot: one per model id some prefill or decode
// lists, plus "" and otherModel. Past it (a fleet listing very many models) a view is built
// for the request alone.
const maxViews = 256

// otherModel is the view key of every model id no prefill or decode lists: those requests
// see the same workers (the ones that serve every model), so client-chosen names cannot grow
// the cache.
const otherModel = "\x00other"

// view is the available part of a snapshot for one model: which workers a selection may pick
// (avail.usable), precomputed so that a selection does not scan the fleet. It is immutable.
// A cached view (Selector.view) is exact while the snapshot's store version and
// worker.AvailabilityEpoch are unchanged; a panic-mode view is built per selection.
type view struct {
	epoch uint64 // worker.AvailabilityEpoch when the workers were read

	// cands are the usable prefills of the pairable groups (Matrix.Pairable) that have a
	// usable decode, in group then registration order; candGroup[i] is cands[i]'s group.
	cands     []*worker.Live
	candGroup []int
	// decodes[g] are pairable group g's usable decodes (nil when none); hasPrefill[g] tells
	// whether the group has a usable prefill.
	decodes    [][]*worker.Live
	hasPrefill []bool
	// prefills are every usable prefill, paired or not (SelectPrefillOnly).
	prefills []*worker.Live

	// Load boards over cands, each decodes[g] and prefills, built on the first selection
	// by a policy that reads one (policy.BoardSelector) and closed with the view. Only a
	// cached view has them (shared: true); a view built for one selection does not.
	shared       bool
	closed       atomic.Bool
	candBoard    atomic.Pointer[worker.LoadBoard]
	decodeBoards []atomic.Pointer[worker.LoadBoard]
	prefillBoard atomic.Pointer[worker.LoadBoard]
}

// board returns the load board of ls kept in slot, building it on first use; nil for a view
// that is not shared or is closed, or when pol does not read boards.
func (v *view) board(pol any, slot *atomic.Pointer[worker.LoadBoard], ls []*worker.Live) *worker.LoadBoard {
	if _, ok := pol.(policy.BoardSelector); !ok || !v.shared || len(ls) == 0 {
		return nil
	}
	if b := slot.Load(); b != nil {
		return b
	}
	b := worker.NewLoadBoard(ls)
	if !slot.CompareAndSwap(nil, b) {
		b.Close()
		return slot.Load()
	}
	// A close racing with the build either sees the board in the slot or is seen here.
	if v.closed.Load() {
		b.Close()
		return nil
	}
	return b
}

// close closes the view's load boards (their workers stop updating them); selections still
// holding the view fall back to reading every candidate.
func (v *view) close() {
	if v == nil || !v.shared || v.closed.Swap(true) {
		return
	}
	closeSlot(&v.candBoard)
	closeSlot(&v.prefillBoard)
	for i := range v.decodeBoards {
		closeSlot(&v.decodeBoards[i])
	}
}

func closeSlot(slot *atomic.Pointer[worker.LoadBoard]) {
	if b := slot.Load(); b != nil {
		b.Close()
	}
}

// buildView reads the workers of mx with a's idea of a usable worker: O(P + D·Gp).
func buildView(mx *pairing.Matrix, a avail, epoch uint64) *view {
	groups := mx.Pairable()
	v := &view{epoch: epoch, decodes: make([][]*worker.Live, len(groups)),
		hasPrefill: make([]bool, len(groups)), prefills: usableOf(mx.Prefills(), a.prefill),
		decodeBoards: make([]atomic.Pointer[worker.LoadBoard], len(groups))}
	for gi := range groups {
		g := &groups[gi]
		v.decodes[gi] = usableOf(g.Decodes, a.decode)
		for _, p := range g.Prefills {
			if !a.prefill(p) {
				continue
			}
			v.hasPrefill[gi] = true
			if len(v.decodes[gi]) > 0 {
				v.cands = append(v.cands, p)
				v.candGroup = append(v.candGroup, gi)
			}
		}
	}
	return v
}

// pinned returns the usable decode whose URL is url, in a pairable group that has a usable
// prefill, or nil.
func (v *view) pinned(url string) *worker.Live {
	if url == "" {
		return nil
	}
	for gi, ds := range v.decodes {
		if !v.hasPrefill[gi] {
			continue
		}
		for _, d := range ds {
			if d.URL == url {
				return d
			}
		}
	}
	return nil
}

// viewSet is a snapshot's cached views at one availability epoch, keyed by model (viewKey).
// It is replaced, never modified.
type viewSet struct {
	epoch uint64
	m     map[string]*view
}

// close closes the views of vs (a set replaced at a new epoch, or a replaced snapshot's).
func (vs *viewSet) close() {
	if vs == nil {
		return
	}
	for _, v := range vs.m {
		v.close()
	}
}

// viewCache holds a snapshot's views. Reads are two atomic loads and a map lookup; a miss
// (a new epoch, or a model seen first) builds under the snapshot's lock and publishes a
// copied set.
type viewCache struct {
	set    atomic.Pointer[viewSet]
	models map[string]struct{} // every model id the snapshot's prefills and decodes list
}

// viewKey is the cache key of model: itself when some worker lists it (or ""), otherModel
// otherwise.
func (c *viewCache) viewKey(model string) string {
	if model == "" {
		return ""
	}
	if _, ok := c.models[model]; ok {
		return model
	}
	return otherModel
}

// listedModels are the model ids the workers list.
func listedModels(legs ...[]*worker.Live) map[string]struct{} {
	m := map[string]struct{}{}
	for _, ls := range legs {
		for _, l := range ls {
			if l == nil {
				continue
			}
			for _, id := range l.Models {
				m[id] = struct{}{}
			}
		}
	}
	return m
}

// view returns the available workers of sn for model, from the cache while neither the fleet
// nor any worker's availability changed. The epoch is read before the workers: a change
// racing with the build moves it again, so the next call rebuilds.
func (s *Selector) view(sn *snapshot, model string) *view {
	key := sn.views.viewKey(model)
	e := worker.AvailabilityEpoch()
	if vs := sn.views.set.Load(); vs != nil && vs.epoch == e {
		if v := vs.m[key]; v != nil {
			return v
		}
	}
	sn.mu.Lock()
	defer sn.mu.Unlock()
	e = worker.AvailabilityEpoch()
	vs := sn.views.set.Load()
	if vs != nil && vs.epoch == e {
		if v := vs.m[key]; v != nil {
			return v
		}
	} else {
		vs.close() // a new epoch: the views of the old one are done
		vs = &viewSet{epoch: e}
	}
	// A request for an unlisted model sees the workers that serve every model: build with
	// a model no worker lists, so that those and only those pass.
	m := model
	if key == otherModel {
		m = otherModel
	}
	v := buildView(sn.mx, avail{model: m}, e)
	if sn.retired || len(vs.m) >= maxViews {
		return v
	}
	v.shared = true
	next := &viewSet{epoch: e, m: make(map[string]*view, len(vs.m)+1)}
	for k, old := range vs.m {
		next.m[k] = old
	}
	next.m[key] = v
	sn.views.set.Store(next)
	return v
}
