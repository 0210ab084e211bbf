package pipeline

import (
	"net/http"
	"strconv"

	"github.com/smg-go/smg/domain/errs"
	"github.com/smg-go/smg/domain/wire"
	"github.com/smg-go/smg/domain/worker"
)

// protocol is how a runtime runs PD over gRPC (grpc.md §1.3).
type protocol int

const (
	parallelSGLang protocol = iota + 1
	parallelTokenSpeed
	sequentialVLLM
)

// checkPair is the select stage's check of the pair dispatch selected (before any leg is
// contacted): both legs gRPC on one runtime with a PD protocol (else 400
// runtime_pd_not_supported), no MoRI-IO (501 moriio_grpc_pd_unsupported).
func checkPair(p, dc *worker.Live) (protocol, error) {
	if p.KVConnector == wire.ConnectorMoRIIO || dc.KVConnector == wire.ConnectorMoRIIO {
		return 0, errs.New(http.StatusNotImplemented, wire.CodeMoRIIOGRPCUnsupported,
			"MoRI-IO PD is supported only by the HTTP PD router (prefill %s, decode %s use %s)", p.ID, dc.ID, wire.ConnectorMoRIIO)
	}
	if p.Mode != worker.ConnGRPC || dc.Mode != worker.ConnGRPC || p.Runtime != dc.Runtime {
		return 0, errs.New(http.StatusBadRequest, wire.CodeRuntimePDNotSupported,
			"the selected pair mixes transports or runtimes (prefill %s %s/%s, decode %s %s/%s): gRPC PD needs both legs on one runtime",
			p.ID, p.Mode, p.Runtime, dc.ID, dc.Mode, dc.Runtime)
	}
	switch p.Runtime {
	case worker.RuntimeSGLang:
		return parallelSGLang, nil
	case worker.RuntimeTokenSpeed:
		return parallelTokenSpeed, nil
	case worker.RuntimeVLLM:
		return sequentialVLLM, nil
	}
	return 0, errs.New(http.StatusBadRequest, wire.CodeRuntimePDNotSupported,
		"runtime %s has no PD protocol over gRPC (SGLang and TokenSpeed dispatch in parallel, vLLM in sequence)", p.Runtime)
}

// contextWindow is a worker's context window from its labels; 0 = none advertised.
func contextWindow(w *worker.Live) int {
	for _, k := range wire.ContextLengthLabels {
		if s, ok := w.Label(k); ok {
			if n, err := strconv.Atoi(s); err == nil && n > 0 {
				return n
			}
		}
	}
	return 0
}

// checkContext rejects a prompt longer than the smaller window of the two legs with 400
// context_length_exceeded (grpc.md §1.5): each prompt of a batch alone; input == limit
// passes; legs without a window are not checked.
func checkContext(j *job, p, dc *worker.Live) error {
	limit := contextWindow(p)
	if d := contextWindow(dc); d > 0 && (limit == 0 || d < limit) {
		limit = d
	}
	if limit == 0 {
		return nil
	}
	for _, pr := range j.prompts {
		if len(pr.ids) > limit {
			return errs.New(http.StatusBadRequest, wire.CodeContextLengthExceeded,
				"This model's maximum context length is %d tokens. However, you requested %d input tokens. Please reduce the length of the input.", limit, len(pr.ids))
		}
	}
	return nil
}
