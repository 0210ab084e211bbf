package doctor

import (
	"fmt"

	"github.com/smg-go/smg/domain/pdmode"
	"github.com/smg-go/smg/domain/worker"
)

// KindPrefillOnlyCapable names a worker that can take prefill-only requests under
// selective PD (--selective-pd-prefill-only-max-tokens): it serves a whole request,
// prompt and output, with no decode leg.
const KindPrefillOnlyCapable = "prefill_only_capable"

// prefillOnly notes each worker that can serve a prefill-only request
// (pdmode.CanServePrefillOnly: a kv_both vLLM prefill, a regular worker beside the PD
// fleet), so an operator sees where short-output requests may go. Notes never fail the
// doctor.
func prefillOnly(ws []worker.Worker) []Finding {
	var out []Finding
	for i := range ws {
		w := &ws[i]
		if !pdmode.CanServePrefillOnly(w) {
			continue
		}
		why := "a regular worker beside the PD fleet"
		if w.Role == worker.RolePrefill {
			why = "a vLLM prefill with kv_role kv_both"
		}
		out = append(out, Finding{Kind: KindPrefillOnlyCapable, Severity: SeverityNote, WorkerID: w.ID, URL: w.URL, Role: string(w.Role),
			Message: fmt.Sprintf("%s %s can take prefill-only requests (%s): with --selective-pd-prefill-only-max-tokens it serves requests capped at that many output tokens whole, with no decode leg", w.Role, w.ID, why)})
	}
	return out
}
