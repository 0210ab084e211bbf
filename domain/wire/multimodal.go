package wire

// Multimodal error codes of the gRPC PD path (seed "Multimodal Requests", "EPD"; grpc.md
// §1.11). The language-model-only and missing-KV codes are non-retryable.
const (
	// CodeMultimodalNotSupported (400): the media cannot be served on this path (an EPD
	// request with --mm-processing worker, a runtime or model without a media path).
	CodeMultimodalNotSupported = "multimodal_not_supported"
	// CodeLMOnlyMRoPE (400): a --language-model-only vLLM decode pool and an M-RoPE model
	// (the items carry grid tensors).
	CodeLMOnlyMRoPE = "pd_decode_language_model_only_mrope"
	// CodeLMOnlyMediaRefs (400): a --language-model-only vLLM decode pool and worker-side
	// media references.
	CodeLMOnlyMediaRefs = "pd_decode_language_model_only_media_refs"
	// CodeLMOnlyNSamples (400): a --language-model-only vLLM decode pool and multimodal n>1.
	CodeLMOnlyNSamples = "pd_decode_language_model_only_n_samples"
	// CodeDecodeMissingKVParams (502): a pixel-free vLLM decode leg would go out without the
	// prefill's KV transfer params (it could not recompute the prompt without its media).
	CodeDecodeMissingKVParams = "pd_decode_missing_kv_transfer_params"
)
