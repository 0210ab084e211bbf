package doctor

import (
	"fmt"
	"strings"

	"github.com/smg-go/smg/domain/worker"
)

// Finding kinds about what a gRPC servicer does not do, so the fleet loses a feature
// without an error: the operator should know before relying on it.
const (
	// KindLayoutUnreported: a gRPC vLLM worker whose servicer reports no KV layout
	// (GetServerInfo fields 11-14 exist only in SMG's v1.11-era vLLM servicer).
	KindLayoutUnreported = "grpc_kv_layout_unreported"
	// KindDPPinIgnored: a --dp-aware rank of a gRPC SGLang worker; SGLang's servicer never
	// reads GenerateRequest.data_parallel_rank.
	KindDPPinIgnored = "sglang_grpc_dp_pin_ignored"
)

// layoutLabels are the labels a vLLM gRPC worker's layout facts become (fields 11-14).
var layoutLabels = []string{"kv_cache_dtype", "block_size", "attention_backend", "model_dtype"}

// servicerGaps names what a gRPC worker's servicer does not do (a warning each).
func servicerGaps(w worker.Worker) []Finding {
	if !isGRPC(w) || (w.Role != worker.RolePrefill && w.Role != worker.RoleDecode) {
		return nil
	}
	f := func(kind, msg string) Finding {
		return Finding{Kind: kind, Severity: SeverityWarning, WorkerID: w.ID, URL: w.URL, Role: string(w.Role), Message: msg}
	}
	var out []Finding
	if w.Runtime == worker.RuntimeVLLM {
		reported := false
		for _, k := range layoutLabels {
			if strings.TrimSpace(w.Labels[k]) != "" {
				reported = true
			}
		}
		if !reported {
			out = append(out, f(KindLayoutUnreported, fmt.Sprintf("vLLM %s %s reports no KV layout (its servicer predates GetServerInfo kv_cache_dtype, block_size, attention_backend, model_dtype, pairing_protocol: SMG vLLM servicer 1.11+): pairing cannot compare its layout, so a kv_cache_dtype or block size mismatch with its peer goes unnoticed, and --pd-pairing-mode strict refuses it against any leg that reports a layout; give both legs a pairing_protocol label at registration to pair them explicitly", w.Role, w.ID)))
		}
	}
	if w.Runtime == worker.RuntimeSGLang && w.DPRank != nil {
		out = append(out, f(KindDPPinIgnored, fmt.Sprintf("SGLang %s %s is --dp-aware rank %d over gRPC, but SGLang's gRPC servicer ignores data_parallel_rank: the engine's scheduler picks the rank, so per-rank load balancing and cache affinity are the gateway's guess, not what the engine does (HTTP workers honour routed_dp_rank)", w.Role, w.ID, *w.DPRank)))
	}
	return out
}
