package doctor

import (
	"fmt"

	"github.com/smg-go/smg/domain/pdmode"
	"github.com/smg-go/smg/domain/worker"
)

// KindDecodeOnlyCapable names a worker that can take decode-only requests under selective
// PD (--selective-pd-uncached-tokens): it prefills locally when sent a whole request.
const KindDecodeOnlyCapable = "decode_only_capable"

// KindPrefillOnlyCapable names a worker that can take prefill-only requests under
// selective PD (--selective-pd-prefill-only-max-tokens): it serves a whole request,
// prompt and output, with no decode leg.
const KindPrefillOnlyCapable = "prefill_only_capable"

// selectiveShape is one request shape selective PD sends to a single worker, and how the
// doctor names the workers that can take it.
type selectiveShape struct {
	kind    string
	can     func(*worker.Worker) bool
	leg     worker.Role // the PD role whose kv_both vLLM workers can take it
	what    string      // "decode-only", "prefill-only"
	whatFor string      // the tail of the note: the flag and what the worker then does
}

var (
	// decodeOnlyShape: pdmode.CanServeAlone (a kv_both vLLM decode, a regular worker).
	decodeOnlyShape = selectiveShape{kind: KindDecodeOnlyCapable, can: pdmode.CanServeAlone, leg: worker.RoleDecode, what: "decode-only",
		whatFor: "with --selective-pd-uncached-tokens it serves prompts whose uncached tokens are at most the threshold alone, prefilling them itself"}
	// prefillOnlyShape: pdmode.CanServePrefillOnly (a kv_both vLLM prefill, a regular worker).
	prefillOnlyShape = selectiveShape{kind: KindPrefillOnlyCapable, can: pdmode.CanServePrefillOnly, leg: worker.RolePrefill, what: "prefill-only",
		whatFor: "with --selective-pd-prefill-only-max-tokens it serves requests capped at that many output tokens whole, with no decode leg"}
)

// capable notes each worker that can take shape's requests, so an operator sees where
// selective PD may send them. Notes never fail the doctor.
func capable(ws []worker.Worker, shape selectiveShape) []Finding {
	var out []Finding
	for i := range ws {
		w := &ws[i]
		if !shape.can(w) {
			continue
		}
		why := "a regular worker beside the PD fleet"
		if w.Role == shape.leg {
			why = fmt.Sprintf("a vLLM %s with kv_role kv_both", shape.leg)
		}
		out = append(out, Finding{Kind: shape.kind, Severity: SeverityNote, WorkerID: w.ID, URL: w.URL, Role: string(w.Role),
			Message: fmt.Sprintf("%s %s can take %s requests (%s): %s", w.Role, w.ID, shape.what, why, shape.whatFor)})
	}
	return out
}
