package ports

import (
	"context"
	"time"

	"github.com/smg-go/smg/domain/respond"
	"github.com/smg-go/smg/domain/worker"
)

// GRPCSampling are the sampling parameters of one gRPC leg in engine-neutral form; the
// adapter maps them onto each engine's SamplingParams (smg-spec.md §9.1). Nil pointers are
// unset (the engine's default).
type GRPCSampling struct {
	Temperature, TopP, MinP              *float32
	TopK                                 *int32
	FrequencyPenalty, PresencePenalty    *float32
	RepetitionPenalty                    *float32
	MaxTokens                            *uint32
	MinTokens                            uint32
	Stop                                 []string
	StopTokenIDs                         []uint32
	IgnoreEOS, SkipSpecialTokens, NoTrim bool
	// N is the engine-side sample count (0 = 1).
	N uint32
	// Seed is vLLM seed / TokenSpeed sampling_seed; SGLang has none.
	Seed *int64
}

// GRPCRendezvous is the SGLang/TokenSpeed KV bootstrap of a parallel PD pair: the prefill
// worker's bootstrap host and port and the room both legs carry (SGLang
// disaggregated_params: room in [0, 2^31−1); TokenSpeed kv_bootstrap_info: room in
// [0, 2^63−1)).
type GRPCRendezvous struct {
	Host string
	Port int
	Room int64
}

// GRPCLeg is one Generate RPC of a PD dispatch.
type GRPCLeg struct {
	// Worker is the engine (its Runtime picks the service).
	Worker *worker.Live
	// RequestID is the engine request id (both legs of a pair share it).
	RequestID string
	// Text is the prompt text (TokenizedInput.original_text); InputIDs its token ids.
	Text     string
	InputIDs []uint32
	Sampling GRPCSampling
	Stream   bool
	// Rendezvous is the SGLang/TokenSpeed bootstrap; nil = none.
	Rendezvous *GRPCRendezvous
	// DPRank pins the leg to a data-parallel rank (SGLang, vLLM); nil = unpinned.
	DPRank *int
	// Logprobs asks for the output tokens' logprobs with TopLogprobs alternatives each
	// (SGLang/TokenSpeed return_logprob + top_logprobs_num, logprob_start_len -1: no prompt
	// logprobs; vLLM SamplingParams.logprobs = TopLogprobs).
	Logprobs    bool
	TopLogprobs int
	// PromptLogprobs asks for the prompt's logprobs too (SGLang/TokenSpeed
	// logprob_start_len 0, vLLM prompt_logprobs = TopLogprobs): a prefill leg of /generate
	// return_logprob.
	PromptLogprobs bool
	// KVTransferJSON is vLLM kv_transfer_params_json ("" = none); KVHost/KVPort the legacy
	// typed kv_transfer_params (KVPort 0 = none).
	KVTransferJSON string
	KVHost         string
	KVPort         int
	// MM is the leg's multimodal input; nil = text only.
	MM *GRPCMultimodal
	// EncodeItems are the EPD rendezvous of a prefill leg, one per media item (TokenSpeed
	// encode_bootstrap_info); nil outside EPD.
	EncodeItems []GRPCEncodeItem
}

// GRPCEvent is one message of a Generate stream: a chunk (delta token ids, cumulative
// counts) or a complete (Complete true: finish reason, matched stop, the output ids — the
// whole sequence with stream=false, the last delta with stream=true).
type GRPCEvent struct {
	Complete bool
	// Index is the sample (n>1 inside the engine).
	Index                                        int
	IDs                                          []uint32
	PromptTokens, CompletionTokens, CachedTokens int
	Finish                                       string
	MatchedTokenID                               *uint32
	MatchedStop                                  *string
	// KVTransferJSON is what a vLLM prefill returns for the decode (kv_transfer_params_json,
	// else the typed params rendered as JSON); "" = nothing.
	KVTransferJSON string
	// MediaIdentity is a vLLM prefill's media_identity (worker-side media); nil = none.
	MediaIdentity *GRPCMediaIdentity
	// Logprobs are the output logprobs of IDs (OutputLogProbs: one per id, with the top
	// alternatives asked for), when the leg asked for them; nil otherwise.
	Logprobs []respond.Logprob
	// PromptLogprobs are the prompt's logprobs (InputLogProbs) when the leg asked for them
	// (SGLang, vLLM; TokenSpeed reports none).
	PromptLogprobs []respond.PromptLogprob
}

// GRPCStream is an open Generate RPC. Recv returns io.EOF after the last message and a gRPC
// status error when the engine failed the request. Close cancels the RPC (the engine treats
// it as an abort); it is safe to call more than once and after the stream ended.
type GRPCStream interface {
	Recv() (GRPCEvent, error)
	Close()
}

// GRPCGenerator runs Generate and Abort RPCs on gRPC workers (the gRPC engine adapter).
type GRPCGenerator interface {
	// Generate opens leg's Generate stream. The RPC lives until ctx ends or the stream is
	// closed; the error is a gRPC status error when the RPC could not start.
	Generate(ctx context.Context, leg GRPCLeg) (GRPCStream, error)
	// Abort sends the engine's Abort RPC for requestIDs (SGLang/TokenSpeed
	// {request_id, reason}; vLLM {request_ids}; smg-spec.md §9.6), bounded by the abort
	// deadline (10 s) and detached from ctx's cancellation.
	Abort(ctx context.Context, w worker.Worker, reason string, requestIDs ...string) error
}

// GRPCDisaggLoad is one DP rank's disaggregation section of an engine load report (SGLang
// GetLoads include "disagg"; smg-spec.md §9.1: prefill_queue_reqs = prefill_prealloc +
// prefill_inflight, decode_queue_reqs = decode_prealloc + decode_transfer +
// decode_retracted).
type GRPCDisaggLoad struct {
	DPRank                             int
	Mode                               string
	KVTransferLatencyMs, KVTransferGBs float64
	PrefillQueueReqs, DecodeQueueReqs  int
}

// GRPCLoads reads engine load reports.
type GRPCLoads interface {
	// DisaggLoads returns w's per-rank disaggregation statistics; empty when the engine
	// reports none (or its runtime has no such report).
	DisaggLoads(ctx context.Context, w worker.Worker) ([]GRPCDisaggLoad, error)
}

// EnginePDMetrics publishes the smg_engine_pd_* gauges (labels worker, role, dp_rank).
type EnginePDMetrics interface {
	SetEnginePD(workerURL, role string, l GRPCDisaggLoad)
	ForgetEnginePD(workerURL string)
}

// DecodeTTFTMetrics records smg_router_ttft_seconds{backend_type="pd"} for the gRPC
// pipeline: the decode leg's dispatch to its first output. endpoint is chat, completions,
// generate, messages or responses.
type DecodeTTFTMetrics interface {
	ObserveDecodeTTFT(model, endpoint string, d time.Duration)
}
