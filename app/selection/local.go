package selection

import (
	"github.com/smg-go/smg/domain/pdmode"
	"github.com/smg-go/smg/domain/policy"
	"github.com/smg-go/smg/domain/worker"
)

// LocalPick is the outcome of SelectLocal: the selective-PD decision, its reason, and for a
// decode-only request the worker that serves it alone with its accounting.
type LocalPick struct {
	Decision pdmode.Decision
	Reason   string
	// Worker serves the whole request (nil unless Decision is pdmode.DecodeOnly).
	Worker *worker.Live
	// Held is Worker's in-flight accounting (one request, the prompt and expected decode
	// tokens); Release frees it. Zero unless Decision is pdmode.DecodeOnly.
	Held Held
}

// SelectLocal makes the selective-PD decision for req before pair selection (cfg must be
// Enabled). The candidates are the available workers serving req.Model that can prefill
// locally (pdmode.CanServeAlone: "regular" workers beside the PD fleet, kv_both vLLM
// decodes), less those in req.Avoid while others remain; each one's cached prompt tokens
// come from the decode policy's prefix index when it keeps one (policy.CachedPrefixes:
// cache_aware), else 0. The prefill pool's load is the least in-flight requests among the
// available prefills serving the model. pdmode.Config.Decide runs under the decode leg's
// lock, so concurrent decisions see each other's holds; a decode-only pick is then held
// like a decode leg (Live.Hold, HoldTokens of the prompt and expected decode tokens,
// smg_worker_requests_active) and shown to the decode policy alone, so cache_aware records
// the prompt on it. A disaggregated decision holds nothing: the caller selects a pair.
func (s *Selector) SelectLocal(req *policy.Request, cfg pdmode.Config) LocalPick {
	if req == nil {
		req = &policy.Request{}
	}
	a := avail{model: req.Model}
	var cands []*worker.Live
	for _, role := range []worker.Role{worker.RoleDecode, worker.RoleRegular} {
		for _, l := range s.store.ByRole(role) {
			if a.decode(l) && pdmode.CanServeAlone(&l.Worker) {
				cands = append(cands, l)
			}
		}
	}
	pmin := int64(-1)
	for _, p := range s.current().mx.Prefills() {
		if a.prefill(p) && (pmin < 0 || p.Load() < pmin) {
			pmin = p.Load()
		}
	}
	cands = avoidForAlone(cands, req.Avoid, pmin >= 0)
	_, tD := legTokens(req)

	s.decodeMu.Lock()
	defer s.decodeMu.Unlock()
	cached := make([]int, len(cands))
	if cp, ok := s.decodePolicy.(policy.CachedPrefixes); ok && len(cands) > 0 {
		cp.CachedTokens(req, cands, int(tD.prompt), cached)
	}
	in := pdmode.Input{PromptTokens: int(tD.prompt), PrefillMinLoad: pmin, Candidates: make([]pdmode.Candidate, len(cands))}
	for i, c := range cands {
		in.Candidates[i] = pdmode.Candidate{Cached: cached[i], Load: c.Load()}
	}
	d, reason, i := cfg.Decide(in)
	out := LocalPick{Decision: d, Reason: reason}
	if d != pdmode.DecodeOnly {
		return out
	}
	w := cands[i]
	_ = s.decodePolicy.Select([]*worker.Live{w}, req) // its prefix index learns the prompt
	w.Hold()
	w.HoldTokens(tD.prompt, tD.decode)
	b := s.metrics.Load()
	if b != nil {
		b.m.AddActive(w.URL, 1)
	}
	s.countSelection(policy.LegDecode, w, req.Model, s.decodePolicy)
	out.Worker, out.Held = w, newHeld(w, nil, b, nil, tD, tokens{})
	return out
}
