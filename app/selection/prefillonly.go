package selection

import (
	"github.com/smg-go/smg/domain/pdmode"
	"github.com/smg-go/smg/domain/policy"
	"github.com/smg-go/smg/domain/worker"
)

// SelectPrefillAlone picks the worker that serves a prefill-only request whole
// (--selective-pd-prefill-only-max-tokens): among the available workers serving req.Model
// that pdmode.CanServePrefillOnly (kv_both vLLM prefills, regular workers beside the PD
// fleet), less those in req.Avoid while others remain, the prefill policy chooses under the
// prefill lock. The pick is held like a lone decode-only worker (one request, the prompt
// and the expected decode tokens, smg_worker_requests_active); Held.Release frees it. w is
// nil (and Held zero) when no such worker is available: the caller goes on as without the
// trigger. Called once per attempt; O(workers).
func (s *Selector) SelectPrefillAlone(req *policy.Request) (w *worker.Live, h Held) {
	if req == nil {
		req = &policy.Request{}
	}
	a := avail{model: req.Model}
	var cands []*worker.Live
	for _, l := range s.store.ByRole(worker.RolePrefill) {
		if a.prefill(l) && pdmode.CanServePrefillOnly(&l.Worker) {
			cands = append(cands, l)
		}
	}
	for _, l := range s.store.ByRole(worker.RoleRegular) {
		if a.decode(l) && pdmode.CanServePrefillOnly(&l.Worker) {
			cands = append(cands, l)
		}
	}
	cands = avoidForAlone(cands, req.Avoid, anyUsable(s.current().mx.Decodes(), a.decode))
	if len(cands) == 0 {
		return nil, Held{}
	}
	_, tD := legTokens(req)
	i, b, ok := s.pick(&s.prefillMu, s.prefillPolicy, cands, nil, req, tD)
	if !ok {
		return nil, Held{}
	}
	s.countSelection(policy.LegPrefill, cands[i], req.Model, s.prefillPolicy)
	return cands[i], newHeld(cands[i], nil, b, nil, tD, tokens{})
}
