package grpcengine

import (
	"context"
	"fmt"

	commonpb "github.com/smg-go/smg/adapters/engine/grpcengine/pb/common"
	tokenspeedpb "github.com/smg-go/smg/adapters/engine/grpcengine/pb/tokenspeed"
	tokenspeedencoderpb "github.com/smg-go/smg/adapters/engine/grpcengine/pb/tokenspeedencoder"
	"github.com/smg-go/smg/domain/worker"
	"github.com/smg-go/smg/ports"
)

var _ ports.GRPCEncoder = (*Pool)(nil)

// Encode implements ports.GRPCEncoder: one TokenSpeedEncoder.Encode RPC with
// request_id, mm_inputs holding the single item and items=[{bootstrap_room: room}]
// (grpc.md §1.13, tokenspeed_encoder.proto v1.9.0). Errors: the channel or the RPC's gRPC
// status, wrapped with the worker URL.
func (p *Pool) Encode(ctx context.Context, w worker.Worker, requestID string, item ports.GRPCMediaItem, room int64) (bool, error) {
	c, err := p.Encoder(w)
	if err != nil {
		return false, err
	}
	r, err := c.Encode(ctx, &tokenspeedencoderpb.EncodeRequest{RequestId: requestID,
		MmInputs: &tokenspeedpb.MultimodalInputs{Items: []*tokenspeedpb.MultimodalItem{tokenspeedItem(item)}},
		Items:    []*tokenspeedencoderpb.EncodeItemAssignment{{BootstrapRoom: room}}})
	if err != nil {
		return false, fmt.Errorf("encode %s: %w", w.URL, err)
	}
	return r.GetAccepted(), nil
}

// tokenspeedMedia maps a leg's media items and EPD rendezvous onto the TokenSpeed request
// (mm_inputs=9, encode_bootstrap_info=10).
func tokenspeedMedia(req *tokenspeedpb.GenerateRequest, leg ports.GRPCLeg) {
	if len(leg.MediaItems) > 0 {
		mm := &tokenspeedpb.MultimodalInputs{Items: make([]*tokenspeedpb.MultimodalItem, 0, len(leg.MediaItems))}
		for _, it := range leg.MediaItems {
			mm.Items = append(mm.Items, tokenspeedItem(it))
		}
		req.MmInputs = mm
	}
	if len(leg.EncodeItems) > 0 {
		info := &tokenspeedpb.EncodeBootstrapInfo{Items: make([]*tokenspeedpb.EncodeItemBootstrapInfo, 0, len(leg.EncodeItems))}
		for _, e := range leg.EncodeItems {
			info.Items = append(info.Items, &tokenspeedpb.EncodeItemBootstrapInfo{ItemIndex: e.ItemIndex,
				BootstrapHost: e.Host, BootstrapPort: int32(e.Port), BootstrapRoom: e.Room})
		}
		req.EncodeBootstrapInfo = info
	}
}

func tokenspeedItem(it ports.GRPCMediaItem) *tokenspeedpb.MultimodalItem {
	m := &tokenspeedpb.MultimodalItem{Modality: modality(it.Modality), ContentHash: it.ContentHash,
		PlaceholderTokenId: it.PlaceholderTokenID}
	if it.EncoderInput != nil {
		m.EncoderInput = tensor(*it.EncoderInput)
	}
	if len(it.ModelTensors) > 0 {
		m.ModelSpecificTensors = make(map[string]*tokenspeedpb.TensorData, len(it.ModelTensors))
		for k, t := range it.ModelTensors {
			m.ModelSpecificTensors[k] = tensor(t)
		}
	}
	for _, ph := range it.Placeholders {
		m.Placeholders = append(m.Placeholders, &tokenspeedpb.PlaceholderRange{Offset: ph.Offset, Length: ph.Length})
	}
	return m
}

func tensor(t ports.GRPCTensor) *tokenspeedpb.TensorData {
	return &tokenspeedpb.TensorData{Shape: t.Shape, Dtype: t.DType, Payload: &tokenspeedpb.TensorData_Inline{Inline: t.Data}}
}

func modality(s string) commonpb.Modality {
	switch s {
	case "image":
		return commonpb.Modality_IMAGE
	case "video":
		return commonpb.Modality_VIDEO
	case "audio":
		return commonpb.Modality_AUDIO
	}
	return commonpb.Modality_MODALITY_UNSPECIFIED
}
