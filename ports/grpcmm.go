package ports

import "context"

// GRPCMediaItem is one media item of a gRPC leg in engine-neutral form; the engine adapter
// maps it onto SGLang mm_inputs, TokenSpeed MultimodalItem or vLLM MultimodalInputs
// (grpc.md §1.1).
type GRPCMediaItem struct {
	// Modality is "image" or "video".
	Modality string
	// Hash is the item's content identity (lowercase hex SHA-256 of the raw media bytes).
	Hash string
	// Pixels are the prepared patch rows as little-endian float32 bytes, shape PixelShape
	// ([patches, C*T*P*P]); nil = the leg carries no pixel payload (a pixel-free clone).
	Pixels     []byte
	PixelShape [2]uint32
	// Grid is the item's image_grid_thw row (M-RoPE); nil = not carried.
	Grid *[3]int64
	// Offset and Length place the item's placeholder tokens in the leg's InputIDs.
	Offset, Length int
	// URL is the media reference as the client sent it (worker-side processing only).
	URL string
}

// GRPCMultimodal is the multimodal part of a gRPC leg.
type GRPCMultimodal struct {
	Items []GRPCMediaItem
	// PlaceholderTokenID is the model's placeholder token (<|image_pad|>; im_token_id).
	PlaceholderTokenID uint32
	// WorkerSide: the items are references the worker fetches and expands itself (vLLM
	// media_refs, SGLang image_urls); the leg's InputIDs are not expanded.
	WorkerSide bool
	// HashesOnly is vLLM's language-model-only decode form: the per-item hashes and
	// modality, nothing else (no placeholders, no tensors).
	HashesOnly bool
}

// GRPCMediaIdentity is what a vLLM prefill returns about worker-processed media
// (GenerateComplete.media_identity): the expanded prompt ids and the pixel-free items, so
// decode needs no media of its own.
type GRPCMediaIdentity struct {
	PromptIDs []uint32
	MM        *GRPCMultimodal
}

// MediaFetcher reads the bytes a media URL names: data: URLs (base64) and http(s) URLs,
// bounded in size and time. Errors are *errs.Error 400s for bad or unreachable media.
type MediaFetcher interface {
	Fetch(ctx context.Context, url string) ([]byte, error)
}
