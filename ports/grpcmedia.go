package ports

import (
	"context"

	"github.com/smg-go/smg/domain/worker"
)

// GRPCTensor is one tensor of a multimodal item as the engines take it (TokenSpeed
// TensorData: shape, dtype name, inline little-endian bytes).
type GRPCTensor struct {
	Shape []uint32
	// DType is the element type name, e.g. "float32" or "int64".
	DType string
	// Data are the elements, little-endian, row-major.
	Data []byte
}

// GRPCPlaceholder is the range of an item's placeholder tokens in the expanded prompt ids
// (TokenSpeed PlaceholderRange).
type GRPCPlaceholder struct {
	Offset, Length uint32
}

// GRPCMediaItem is one prepared media item of a gRPC leg (TokenSpeed MultimodalItem;
// grpc.md §1.11, §1.13).
type GRPCMediaItem struct {
	// Modality is "image" or "video".
	Modality string
	// ContentHash identifies the media content (the gateway's hash of the raw bytes).
	ContentHash []byte
	// EncoderInput is the vision tower's input (pixel values); nil once the item's pixels
	// were dropped (an EPD prefill leg, a decode leg).
	EncoderInput *GRPCTensor
	// ModelTensors are the model-specific tensors kept on every leg, e.g. image_grid_thw.
	ModelTensors map[string]GRPCTensor
	// Placeholders are the item's token ranges in the prompt ids.
	Placeholders []GRPCPlaceholder
	// PlaceholderTokenID is the id the placeholders carry (Qwen2.5-VL <|image_pad|>); nil =
	// unset.
	PlaceholderTokenID *uint32
}

// GRPCEncodeItem is one EPD encode→prefill rendezvous of a prefill leg (TokenSpeed
// EncodeItemBootstrapInfo): the item's index in the leg's media items, the encode
// worker's bootstrap host and port (8998 when it registered none), and the item's room,
// uniform in [0, 2^63−1) (grpc.md §1.13).
type GRPCEncodeItem struct {
	ItemIndex uint32
	Host      string
	Port      int
	Room      int64
}

// GRPCEncoder sends EPD encode jobs to TokenSpeed encode workers (TokenSpeedEncoder.Encode).
type GRPCEncoder interface {
	// Encode asks w to encode item and ship its embedding to the prefill under room;
	// requestID is "encode-<uuidv7>". It returns the worker's accepted flag, or the RPC's
	// gRPC status error. Bounded by ctx only.
	Encode(ctx context.Context, w worker.Worker, requestID string, item GRPCMediaItem, room int64) (accepted bool, err error)
}
