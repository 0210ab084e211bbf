package ports

import (
	"context"

	"github.com/smg-go/smg/domain/worker"
)

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
	// Encode asks w to encode the single item of mm (with its pixels) and ship the
	// embedding to the prefill under room; requestID is "encode-<uuidv7>". It returns the
	// worker's accepted flag, or the RPC's gRPC status error. Bounded by ctx only.
	Encode(ctx context.Context, w worker.Worker, requestID string, mm *GRPCMultimodal, room int64) (accepted bool, err error)
}
