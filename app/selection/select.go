package selection

import (
	"slices"
	"sync"
	"time"

	"github.com/smg-go/smg/domain/errs"
	"github.com/smg-go/smg/domain/pairing"
	"github.com/smg-go/smg/domain/policy"
	"github.com/smg-go/smg/domain/wire"
	"github.com/smg-go/smg/domain/worker"
)

// Select picks a prefill and a decode worker for req and accounts one in-flight request on
// each (worker.Live.Acquire). The prefill policy chooses among the available prefills
// (worker.Live.Available) that serve req.Model (worker.Worker.ServesModel; "" matches every
// worker) and have at least one available compatible decode serving it; the decode policy then
// chooses among that prefill's available compatible decodes (seed "Per-Phase Policies"). Each
// leg's policy Select and Acquire run under that leg's lock, so concurrent requests see each
// other's picks. A prefill without a compatible decode is skipped while others can pair.
//
// On success release frees both in-flight slots; it is safe to call more than once. The
// available workers come from a view cached per model until the fleet or a worker's
// availability changes (view.go), so a successful selection does not scan the fleet: its
// cost is that of the policies (constant for round_robin and power_of_two).
//
// Panic mode (Envoy's, at a 0 % threshold): when a leg has no available worker serving the
// model but has ready ones that are only gated (circuit breaker open, or another gate), the
// pair is chosen again with those counted in on that leg, least loaded first (leastLoaded),
// and the request gets that worker's answer or error instead of a 503: the last workers of
// a leg are never ejected by breakers alone. Workers that are not ready (unhealthy,
// draining, pending) stay out. Each panic-mode pick is logged at warn level (at most every
// panicWarnInterval).
//
// Errors are *errs.Error:
//   - 503 no_available_workers (errs.NoAvailableWorkers, Leg "prefill" or "decode") when that
//     leg has no ready worker serving the model (prefill checked first), or when the leg's
//     policy picks nothing ("Policy <name> failed to select a <leg> worker").
//   - 503 no_compatible_pd_pair (pairing.NoCompatiblePairError) when both legs have available
//     workers but none pairs; the message is pairing.Explain over those workers (via
//     Matrix.ExplainWhere, O(workers) without allocation per worker) and is logged at
//     warn level once per fleet change (at most every 30 s while the fleet is unchanged).
func (s *Selector) Select(req *policy.Request) (prefill, decode *worker.Live, release func(), err error) {
	p, d, h, err := s.selectHeld(req)
	if err != nil {
		return nil, nil, nil, err
	}
	return p, d, h.Release, nil
}

// selectHeld is Select returning the accounting itself.
func (s *Selector) selectHeld(req *policy.Request) (prefill, decode *worker.Live, h Held, err error) {
	if req == nil {
		req = &policy.Request{}
	}
	sn := s.current()
	prefill, decode, h, err = s.selectPair(sn, req, avail{model: req.Model})
	if err == nil {
		return prefill, decode, h, nil
	}
	a, ok := panicFor(sn, req.Model)
	if !ok {
		return nil, nil, Held{}, err
	}
	p, d, hp, perr := s.selectPair(sn, req, a)
	if perr != nil {
		return nil, nil, Held{}, err
	}
	s.warnPanic(a, p, d)
	return p, d, hp, nil
}

// selectPair is one selection over sn with a's idea of a usable worker: each leg's policy
// over the cached view normally, least loaded on a leg in panic mode over a view built for
// this selection.
func (s *Selector) selectPair(sn *snapshot, req *policy.Request, a avail) (prefill, decode *worker.Live, h Held, err error) {
	groups := sn.mx.Pairable()
	polP, polD := s.prefillPolicy, s.decodePolicy
	var v *view
	if a.panicP || a.panicD {
		polP, polD = panicPolicy(a.panicP, polP), panicPolicy(a.panicD, polD)
		v = buildView(sn.mx, a, 0)
	} else {
		v = s.view(sn, req.Model)
	}

	cands, candGroup := v.cands, v.candGroup
	pinned := v.pinned(req.PinDecode)
	if pinned != nil {
		cands, candGroup = pinnedOnly(cands, candGroup, groups, pinned)
	}
	if len(cands) == 0 {
		return nil, nil, Held{}, s.noPair(sn, req.Model)
	}
	cands, candGroup = preferOthers(cands, candGroup, req.Avoid)

	tP, tD := legTokens(req)
	i, bP, ok := s.pick(&s.prefillMu, polP, cands, v.board(polP, &v.candBoard, v.cands), req, tP)
	if !ok {
		return nil, nil, Held{}, policyFailed(polP, policy.LegPrefill)
	}
	prefill = cands[i]

	decodes := v.decodes[candGroup[i]]
	if len(decodes) == 0 { // not in a cached view; kept as a guard
		unhold(prefill, bP, tP)
		return nil, nil, Held{}, errs.NoAvailableWorkers(string(policy.LegDecode))
	}
	decodes, _ = preferOthers(decodes, nil, req.Avoid)
	if pinned != nil && slices.Contains(decodes, pinned) {
		decodes = []*worker.Live{pinned}
	}
	g := candGroup[i]
	j, bD, ok := s.pick(&s.decodeMu, polD, decodes, v.board(polD, &v.decodeBoards[g], v.decodes[g]), req, tD)
	if !ok {
		unhold(prefill, bP, tP)
		return nil, nil, Held{}, policyFailed(polD, policy.LegDecode)
	}
	decode = decodes[j]

	s.countSelection(policy.LegPrefill, prefill, req.Model, s.prefillPolicy)
	s.countSelection(policy.LegDecode, decode, req.Model, s.decodePolicy)
	return prefill, decode, newHeld(prefill, decode, bP, bD, tP, tD), nil
}

// panicPolicy is leastLoaded on a leg in panic mode, pol otherwise.
func panicPolicy(panicking bool, pol policy.Policy) policy.Policy {
	if panicking {
		return leastLoaded{}
	}
	return pol
}

// pinnedOnly keeps the candidates whose group may pair with pinned (a retry keeping its
// decode), in new slices: the view's are shared.
func pinnedOnly(cands []*worker.Live, candGroup []int, groups []pairing.Group, pinned *worker.Live) ([]*worker.Live, []int) {
	var keep []*worker.Live
	var keepGroup []int
	for k, p := range cands {
		if slices.Contains(groups[candGroup[k]].Decodes, pinned) {
			keep = append(keep, p)
			keepGroup = append(keepGroup, candGroup[k])
		}
	}
	return keep, keepGroup
}

// SelectPrefillOnly picks one prefill worker for a request that needs no decode leg
// (/v1/messages/count_tokens): the prefill policy chooses among all available prefills serving
// req.Model, paired or not, under the prefill lock, and the pick is accounted. release frees
// the in-flight slot. Errors: 503 no_available_workers for the prefill leg (no such worker, or
// the policy picks nothing).
func (s *Selector) SelectPrefillOnly(req *policy.Request) (prefill *worker.Live, release func(), err error) {
	if req == nil {
		req = &policy.Request{}
	}
	v := s.view(s.current(), req.Model)
	cands := v.prefills
	if len(cands) == 0 {
		return nil, nil, errs.NoAvailableWorkers(string(policy.LegPrefill))
	}
	tP, _ := legTokens(req)
	i, b, ok := s.pick(&s.prefillMu, s.prefillPolicy, cands, v.board(s.prefillPolicy, &v.prefillBoard, v.prefills), req, tP)
	if !ok {
		return nil, nil, policyFailed(s.prefillPolicy, policy.LegPrefill)
	}
	s.countSelection(policy.LegPrefill, cands[i], req.Model, s.prefillPolicy)
	return cands[i], newHeld(cands[i], nil, b, nil, tP, tokens{}).Release, nil
}

// pick runs pol.Select and holds the picked worker (one request and t's tokens) under mu, so
// the next pick sees its load. A policy that reads load boards (policy.BoardSelector) gets
// board, the view's board of the candidates (nil or another slice's: it reads cands).
// ok is false when the policy picked nothing (or an index out of range). b is the metrics
// the hold was mirrored in (smg_worker_requests_active{worker}), nil when none were set.
func (s *Selector) pick(mu *sync.Mutex, pol policy.Policy, cands []*worker.Live, board *worker.LoadBoard, req *policy.Request, t tokens) (i int, b *metricsBox, ok bool) {
	mu.Lock()
	defer mu.Unlock()
	if bs, isBS := pol.(policy.BoardSelector); isBS {
		i = bs.SelectBoard(cands, board, req)
	} else {
		i = pol.Select(cands, req)
	}
	if i < 0 || i >= len(cands) {
		return -1, nil, false
	}
	w := cands[i]
	w.Hold()
	w.HoldTokens(t.prompt, t.decode)
	if b = s.metrics.Load(); b != nil {
		b.m.AddActive(w.URL, 1)
	}
	return i, b, true
}

// unhold undoes one pick's hold on w (a request and t's tokens) and its metrics mirror b.
func unhold(w *worker.Live, b *metricsBox, t tokens) {
	w.Unhold()
	w.UnholdTokens(t.prompt, t.decode)
	if b != nil {
		b.m.AddActive(w.URL, -1)
	}
}

// noPair classifies a failed selection: which leg has nothing available, or no pair at all.
func (s *Selector) noPair(sn *snapshot, model string) error {
	a := avail{model: model}
	if !anyUsable(sn.mx.Prefills(), a.prefill) {
		return errs.NoAvailableWorkers(string(policy.LegPrefill))
	}
	if !anyUsable(sn.mx.Decodes(), a.decode) {
		return errs.NoAvailableWorkers(string(policy.LegDecode))
	}
	msg := sn.mx.ExplainWhere(a.prefill)
	s.warnNoPair(sn.version, msg)
	return pairing.NoCompatiblePairError(msg)
}

// warnNoPair logs msg at warn level once per matrix version, and again at most every
// warnInterval while the version is unchanged.
func (s *Selector) warnNoPair(version uint64, msg string) {
	now := time.Now()
	s.warnMu.Lock()
	if s.warned && s.warnVersion == version && now.Sub(s.warnAt) < warnInterval {
		s.warnMu.Unlock()
		return
	}
	s.warned, s.warnVersion, s.warnAt = true, version, now
	s.warnMu.Unlock()
	s.log.Warn(msg, "code", wire.CodeNoCompatiblePDPair, "pd_pairing_mode", s.mode.String())
}

// countSelection counts a pick in smg_worker_selection_total; a request without a model is
// counted under the model the picked worker serves.
func (s *Selector) countSelection(leg policy.Leg, w *worker.Live, model string, pol policy.Policy) {
	if b := s.metrics.Load(); b != nil {
		if model == "" {
			model = w.ServedModel()
		}
		b.m.IncSelection(string(leg), string(w.Mode), model, pol.Name())
	}
}

// policyFailed is the 503 no_available_workers for a policy that picked nothing
// (smg-spec.md §2.2: "Policy {policy_name} failed to select a {leg} worker").
func policyFailed(pol policy.Policy, leg policy.Leg) *errs.Error {
	e := errs.NoAvailableWorkers(string(leg))
	e.Message = "Policy " + pol.Name() + " failed to select a " + string(leg) + " worker"
	return e
}

// preferOthers drops the workers whose URL is in avoid (they failed this request already),
// unless that would leave none: then every candidate stays, so a lone worker still gets the
// retry. group, when not nil, is filtered in step with ls. Without avoid, ls is returned as
// is (no allocation on the first attempt).
func preferOthers(ls []*worker.Live, group []int, avoid []string) ([]*worker.Live, []int) {
	if len(avoid) == 0 {
		return ls, group
	}
	var keep []*worker.Live
	var keepGroup []int
	for k, l := range ls {
		if !slices.Contains(avoid, l.URL) {
			keep = append(keep, l)
			if group != nil {
				keepGroup = append(keepGroup, group[k])
			}
		}
	}
	if len(keep) == 0 {
		return ls, group
	}
	return keep, keepGroup
}

// avoidForAlone is preferOthers for a worker that would serve the request alone (decode-only,
// prefill-only): when every candidate failed this request already and a pair can serve it
// instead (pairOK), none is returned, so the retry goes to a new pair rather than back to the
// lone worker (seed: a retry goes to a new pair); without that alternative the lone worker
// still gets the retry.
func avoidForAlone(ls []*worker.Live, avoid []string, pairOK bool) []*worker.Live {
	keep, _ := preferOthers(ls, nil, avoid)
	if pairOK && len(keep) > 0 && slices.Contains(avoid, keep[0].URL) {
		return nil // preferOthers kept them all: every one is avoided
	}
	return keep
}

func anyUsable(ls []*worker.Live, ok func(*worker.Live) bool) bool {
	for _, l := range ls {
		if ok(l) {
			return true
		}
	}
	return false
}

func usableOf(ls []*worker.Live, ok func(*worker.Live) bool) []*worker.Live {
	var out []*worker.Live
	for _, l := range ls {
		if ok(l) {
			out = append(out, l)
		}
	}
	return out
}
