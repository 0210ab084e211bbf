package grpcengine

import (
	"context"
	"fmt"

	tokenspeedpb "github.com/smg-go/smg/adapters/engine/grpcengine/pb/tokenspeed"
	tokenspeedencoderpb "github.com/smg-go/smg/adapters/engine/grpcengine/pb/tokenspeedencoder"
	"github.com/smg-go/smg/domain/worker"
	"github.com/smg-go/smg/ports"
)

var _ ports.GRPCEncoder = (*Pool)(nil)

// Encode implements ports.GRPCEncoder: one TokenSpeedEncoder.Encode RPC with request_id,
// mm_inputs holding mm's item (TokenSpeed per-item form, pixels included) and
// items=[{bootstrap_room: room}] (grpc.md §1.13, tokenspeed_encoder.proto v1.9.0).
// Errors: the channel or the RPC's gRPC status, wrapped with the worker URL.
func (p *Pool) Encode(ctx context.Context, w worker.Worker, requestID string, mm *ports.GRPCMultimodal, room int64) (bool, error) {
	c, err := p.Encoder(w)
	if err != nil {
		return false, err
	}
	r, err := c.Encode(ctx, &tokenspeedencoderpb.EncodeRequest{RequestId: requestID, MmInputs: tokenspeedMM(mm),
		Items: []*tokenspeedencoderpb.EncodeItemAssignment{{BootstrapRoom: room}}})
	if err != nil {
		return false, fmt.Errorf("encode %s: %w", w.URL, err)
	}
	return r.GetAccepted(), nil
}

// tokenspeedEncodeInfo is a prefill leg's encode_bootstrap_info=10: one entry per media
// item, nil outside EPD.
func tokenspeedEncodeInfo(items []ports.GRPCEncodeItem) *tokenspeedpb.EncodeBootstrapInfo {
	if len(items) == 0 {
		return nil
	}
	info := &tokenspeedpb.EncodeBootstrapInfo{Items: make([]*tokenspeedpb.EncodeItemBootstrapInfo, 0, len(items))}
	for _, e := range items {
		info.Items = append(info.Items, &tokenspeedpb.EncodeItemBootstrapInfo{ItemIndex: e.ItemIndex,
			BootstrapHost: e.Host, BootstrapPort: int32(e.Port), BootstrapRoom: e.Room})
	}
	return info
}
