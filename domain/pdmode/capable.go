package pdmode

import (
	"strings"

	"github.com/smg-go/smg/domain/handoff"
	"github.com/smg-go/smg/domain/worker"
)

// KVRoleBoth is the vLLM kv_role of a worker that both produces and consumes KV: such a
// decode prefills locally when a request carries no kv_transfer_params (kv-routing.md
// §6.5; llm-d runs its decode pods so).
const KVRoleBoth = "kv_both"

// CanServeAlone reports whether w may be sent a whole request with no prefill leg:
//   - a "regular" (non-PD) worker registered beside the PD fleet, over HTTP of any runtime
//     but TokenSpeed, over gRPC only vLLM (the gRPC pipeline serves a lone worker through
//     its sequential vLLM path);
//   - a vLLM decode whose kv_role is kv_both with the NIXL or Mooncake connector (or none):
//     with no kv_transfer_params the connector reports no external tokens and the engine
//     prefills itself. MoRI-IO decodes are left out (their handoff is not covered).
//
// Never a SGLang PD decode (it rejects requests without bootstrap data), a TokenSpeed
// worker, a prefill or an encode worker.
func CanServeAlone(w *worker.Worker) bool {
	if w == nil || w.Runtime == worker.RuntimeTokenSpeed {
		return false
	}
	switch w.Role {
	case worker.RoleRegular:
		return w.Mode != worker.ConnGRPC || w.Runtime == worker.RuntimeVLLM
	case worker.RoleDecode:
		if w.Runtime != worker.RuntimeVLLM || !strings.EqualFold(strings.TrimSpace(w.KVRole), KVRoleBoth) {
			return false
		}
		return !handoff.IsMoRIIO(*w)
	}
	return false
}

// CanServePrefillOnly reports whether w may be sent a whole request as a prefill-only one
// (Config.PrefillOnlyMaxTokens): a vLLM prefill whose kv_role is kv_both, not MoRI-IO (with
// no kv_transfer_params its connector does nothing and the engine generates the output
// itself), or a worker CanServeAlone takes as "regular". Never a SGLang or TokenSpeed
// prefill (their PD prefill needs a bootstrap room and a decode peer), a decode or an
// encode worker.
func CanServePrefillOnly(w *worker.Worker) bool {
	if w == nil || w.Runtime == worker.RuntimeTokenSpeed {
		return false
	}
	switch w.Role {
	case worker.RoleRegular:
		return CanServeAlone(w)
	case worker.RolePrefill:
		if w.Runtime != worker.RuntimeVLLM || !strings.EqualFold(strings.TrimSpace(w.KVRole), KVRoleBoth) {
			return false
		}
		return !handoff.IsMoRIIO(*w)
	}
	return false
}
