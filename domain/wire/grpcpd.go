package wire

// gRPC PD pipeline error codes and labels (seed "Error Codes"; grpc.md §1.3-1.8).
const (
	// CodePrefillFailedToStart and CodeDecodeFailedToStart carry the engine's refusal of a
	// leg, the HTTP status mapped from its gRPC code (grpc.md §3.3).
	CodePrefillFailedToStart = "prefill_worker_failed_to_start"
	CodeDecodeFailedToStart  = "decode_worker_failed_to_start"
	// CodePrefillStreamError (status mapped from the gRPC code): the prefill stream broke
	// after it started.
	CodePrefillStreamError = "prefill_stream_error"
	// CodeRuntimePDNotSupported (400): the selected runtime has no PD protocol.
	CodeRuntimePDNotSupported = "runtime_pd_not_supported"
	// CodeMoRIIOGRPCUnsupported (501): a MoRI-IO pair over gRPC.
	CodeMoRIIOGRPCUnsupported = "moriio_grpc_pd_unsupported"
	// CodeContextLengthExceeded (400): the prompt exceeds the smaller context window of the
	// two legs.
	CodeContextLengthExceeded = "context_length_exceeded"
	// LabelMaxNumSeqs is TokenSpeed's running window, read before max_running_requests.
	LabelMaxNumSeqs = "max_num_seqs"
)

// ContextLengthLabels are the labels a worker's context window is read from, first
// positive wins (SMG create_worker.rs; grpc.md §1.2).
var ContextLengthLabels = []string{"context_length", "max_context_length", "max_model_len", "max_total_tokens", "max_seq_len"}
