package doctor

import (
	"fmt"

	"github.com/smg-go/smg/domain/pdmode"
	"github.com/smg-go/smg/domain/worker"
)

// KindDecodeOnlyCapable names a worker that can take decode-only requests under selective
// PD (--selective-pd-uncached-tokens): it prefills locally when sent a whole request.
const KindDecodeOnlyCapable = "decode_only_capable"

// decodeOnly notes each worker that can serve a request alone (pdmode.CanServeAlone: a
// kv_both vLLM decode, a regular worker beside the PD fleet), so an operator sees where
// selective PD may send short or cached prompts. Notes never fail the doctor.
func decodeOnly(ws []worker.Worker) []Finding {
	var out []Finding
	for i := range ws {
		w := &ws[i]
		if !pdmode.CanServeAlone(w) {
			continue
		}
		why := "a regular worker beside the PD fleet"
		if w.Role == worker.RoleDecode {
			why = "a vLLM decode with kv_role kv_both"
		}
		out = append(out, Finding{Kind: KindDecodeOnlyCapable, Severity: SeverityNote, WorkerID: w.ID, URL: w.URL, Role: string(w.Role),
			Message: fmt.Sprintf("%s %s can take decode-only requests (%s): with --selective-pd-uncached-tokens it serves prompts whose uncached tokens are at most the threshold alone, prefilling them itself", w.Role, w.ID, why)})
	}
	return out
}
