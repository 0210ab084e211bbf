package wire

// Text-pipeline wire names (gRPC path; shared/reference/grpc.md §1.14).
const (
	// CodeTokenizerNotFound (500): no tokenizer for the model from any source (flags, worker
	// labels, the workers' GetTokenizer RPC).
	CodeTokenizerNotFound = "tokenizer_not_found"
	// LabelTokenizerPath and LabelModelPath are the worker labels a gRPC worker's tokenizer
	// is loaded from, in that order, before --tokenizer-path and --model-path.
	LabelTokenizerPath = "tokenizer_path"
	LabelModelPath     = "model_path"
)
