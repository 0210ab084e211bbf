package grpcengine

import (
	"encoding/binary"
	"encoding/hex"

	commonpb "github.com/smg-go/smg/adapters/engine/grpcengine/pb/common"
	sglangpb "github.com/smg-go/smg/adapters/engine/grpcengine/pb/sglang"
	tokenspeedpb "github.com/smg-go/smg/adapters/engine/grpcengine/pb/tokenspeed"
	vllmpb "github.com/smg-go/smg/adapters/engine/grpcengine/pb/vllm"
	"github.com/smg-go/smg/ports"
)

// GridKey is the model_specific_tensors key of the M-RoPE image grid (Qwen2-VL family
// image_grid_thw, int64 [items, 3]).
const GridKey = "image_grid_thw"

// PixelKey is the primary tensor's kwarg name (vLLM flat_keys; absent encoder_input_key
// means pixel_values).
const PixelKey = "pixel_values"

func modality(m string) commonpb.Modality {
	if m == "video" {
		return commonpb.Modality_VIDEO
	}
	return commonpb.Modality_IMAGE
}

// pixelBatch concatenates the items' pixel rows: ([rows, cols], bytes); ok false when no
// item carries pixels.
// One item's rows are used as they are; several are copied once into an exact buffer (the
// rows of a large image are tens of MB).
func pixelBatch(items []ports.GRPCMediaItem) ([]uint32, []byte, bool) {
	var rows, cols uint32
	var withPixels []ports.GRPCMediaItem
	size := 0
	for _, it := range items {
		if it.Pixels == nil {
			continue
		}
		rows += it.PixelShape[0]
		cols = it.PixelShape[1]
		withPixels = append(withPixels, it)
		size += len(it.Pixels)
	}
	switch len(withPixels) {
	case 0:
		return []uint32{rows, cols}, nil, false
	case 1:
		return []uint32{rows, cols}, withPixels[0].Pixels, true
	}
	data := make([]byte, 0, size)
	for _, it := range withPixels {
		data = append(data, it.Pixels...)
	}
	return []uint32{rows, cols}, data, true
}

// gridBatch is the items' grid rows as int64 [n, 3]; ok false when no item carries one.
func gridBatch(items []ports.GRPCMediaItem) ([]uint32, []byte, bool) {
	var data []byte
	n := uint32(0)
	for _, it := range items {
		if it.Grid == nil {
			continue
		}
		for _, v := range it.Grid {
			data = binary.LittleEndian.AppendUint64(data, uint64(v))
		}
		n++
	}
	return []uint32{n, 3}, data, n > 0
}

// sglangMM is SGLang's mm_inputs (smg-spec.md §9.1): worker-side items as image_urls,
// gateway-prepared ones as one pixel_values batch, image_grid_thw, im_token_id and the
// placeholders.
func sglangMM(mm *ports.GRPCMultimodal) *sglangpb.MultimodalInputs {
	if mm == nil || len(mm.Items) == 0 {
		return nil
	}
	out := &sglangpb.MultimodalInputs{}
	for _, it := range mm.Items {
		out.Modalities = append(out.Modalities, it.Modality)
		if mm.WorkerSide {
			out.ImageUrls = append(out.ImageUrls, it.URL)
			continue
		}
		out.MmPlaceholders = append(out.MmPlaceholders, &sglangpb.PlaceholderRange{Offset: uint32(it.Offset), Length: uint32(it.Length)})
	}
	if mm.WorkerSide {
		return out
	}
	id := mm.PlaceholderTokenID
	out.ImTokenId = &id
	if shape, data, ok := pixelBatch(mm.Items); ok {
		out.PixelValues = &sglangpb.TensorData{Data: data, Shape: shape, Dtype: "float32"}
	}
	if shape, data, ok := gridBatch(mm.Items); ok {
		out.ModelSpecificTensors = map[string]*sglangpb.TensorData{GridKey: {Data: data, Shape: shape, Dtype: "int64"}}
	}
	return out
}

// tokenspeedMM is TokenSpeed's per-item mm_inputs: modality, content_hash (the SHA-256
// bytes), encoder_input (the pixels; absent on a pixel-free clone), image_grid_thw [1, 3],
// placeholders and placeholder_token_id.
func tokenspeedMM(mm *ports.GRPCMultimodal) *tokenspeedpb.MultimodalInputs {
	if mm == nil || len(mm.Items) == 0 || mm.WorkerSide {
		return nil
	}
	out := &tokenspeedpb.MultimodalInputs{}
	for _, it := range mm.Items {
		h, _ := hex.DecodeString(it.Hash)
		id := mm.PlaceholderTokenID
		x := &tokenspeedpb.MultimodalItem{Modality: modality(it.Modality), ContentHash: h, PlaceholderTokenId: &id,
			Placeholders: []*tokenspeedpb.PlaceholderRange{{Offset: uint32(it.Offset), Length: uint32(it.Length)}}}
		if it.Pixels != nil {
			x.EncoderInput = &tokenspeedpb.TensorData{Shape: it.PixelShape[:], Dtype: "float32",
				Payload: &tokenspeedpb.TensorData_Inline{Inline: it.Pixels}}
		}
		if it.Grid != nil {
			_, data, _ := gridBatch([]ports.GRPCMediaItem{it})
			x.ModelSpecificTensors = map[string]*tokenspeedpb.TensorData{GridKey: {Shape: []uint32{1, 3}, Dtype: "int64",
				Payload: &tokenspeedpb.TensorData_Inline{Inline: data}}}
		}
		out.Items = append(out.Items, x)
	}
	return out
}

// vllmMM fills a vLLM request's multimodal fields: media_refs for worker-side items;
// otherwise one MultimodalInputs batch with pixel_values, the image_grid_thw tensor
// (batched_keys; pixel_values is flat with its sizes from the grid, flat_keys), im_token_id,
// the placeholders and mm_hashes. HashesOnly sends mm_hashes and the modality alone.
func vllmMM(req *vllmpb.GenerateRequest, mm *ports.GRPCMultimodal) {
	if mm == nil || len(mm.Items) == 0 {
		return
	}
	if mm.WorkerSide {
		refs := &vllmpb.MediaRefs{}
		for _, it := range mm.Items {
			refs.Items = append(refs.Items, &vllmpb.MediaRef{Modality: modality(it.Modality), Url: it.URL})
		}
		req.MediaRefs = refs
		return
	}
	out := &vllmpb.MultimodalInputs{Modality: modality(mm.Items[0].Modality)}
	for _, it := range mm.Items {
		out.MmHashes = append(out.MmHashes, it.Hash)
	}
	req.MmInputs = out
	if mm.HashesOnly {
		return
	}
	id := mm.PlaceholderTokenID
	out.ImTokenId = &id
	for _, it := range mm.Items {
		out.MmPlaceholders = append(out.MmPlaceholders, &vllmpb.PlaceholderRange{Offset: uint32(it.Offset), Length: uint32(it.Length)})
	}
	if shape, data, ok := pixelBatch(mm.Items); ok {
		out.PixelValues = &vllmpb.TensorData{Shape: shape, Dtype: "float32", Payload: &vllmpb.TensorData_Inline{Inline: data}}
		out.FlatKeys = map[string]string{PixelKey: GridKey}
	}
	if shape, data, ok := gridBatch(mm.Items); ok {
		out.ModelSpecificTensors = map[string]*vllmpb.TensorData{GridKey: {Shape: shape, Dtype: "int64",
			Payload: &vllmpb.TensorData_Inline{Inline: data}}}
		out.BatchedKeys = []string{GridKey}
	}
}

// vllmIdentity reads a prefill's media_identity into engine-neutral form: the expanded ids
// and one pixel-free item per hash with its placeholder and grid row.
func vllmIdentity(id *vllmpb.MediaIdentity) *ports.GRPCMediaIdentity {
	if id == nil {
		return nil
	}
	out := &ports.GRPCMediaIdentity{PromptIDs: id.GetPromptTokenIds()}
	in := id.GetMmInputs()
	if in == nil {
		return out
	}
	mm := &ports.GRPCMultimodal{PlaceholderTokenID: in.GetImTokenId()}
	grid := in.GetModelSpecificTensors()[GridKey].GetInline()
	for i, h := range in.GetMmHashes() {
		it := ports.GRPCMediaItem{Modality: "image", Hash: h}
		if in.GetModality() == commonpb.Modality_VIDEO {
			it.Modality = "video"
		}
		if ph := in.GetMmPlaceholders(); i < len(ph) {
			it.Offset, it.Length = int(ph[i].GetOffset()), int(ph[i].GetLength())
		}
		if len(grid) >= 24*(i+1) {
			var g [3]int64
			for k := range g {
				g[k] = int64(binary.LittleEndian.Uint64(grid[24*i+8*k:]))
			}
			it.Grid = &g
		}
		mm.Items = append(mm.Items, it)
	}
	out.MM = mm
	return out
}

// LabelSupportsVision is the worker label a vLLM worker's GetModelInfo supports_vision
// becomes ("true"/"false"); "false" on a decode worker marks a --language-model-only pool.
const LabelSupportsVision = "supports_vision"
