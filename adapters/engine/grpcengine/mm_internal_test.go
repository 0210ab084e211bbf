package grpcengine

import (
	"encoding/binary"
	"encoding/hex"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	commonpb "github.com/smg-go/smg/adapters/engine/grpcengine/pb/common"
	vllmpb "github.com/smg-go/smg/adapters/engine/grpcengine/pb/vllm"
	"github.com/smg-go/smg/ports"
)

func testMM(pixels bool) *ports.GRPCMultimodal {
	g1, g2 := [3]int64{1, 4, 4}, [3]int64{1, 2, 6}
	mm := &ports.GRPCMultimodal{PlaceholderTokenID: 151655, Items: []ports.GRPCMediaItem{
		{Modality: "image", Hash: "0a0b", Grid: &g1, Offset: 3, Length: 4},
		{Modality: "image", Hash: "0c0d", Grid: &g2, Offset: 10, Length: 3}}}
	if pixels {
		mm.Items[0].Pixels, mm.Items[0].PixelShape = make([]byte, 16*8), [2]uint32{16, 2}
		mm.Items[1].Pixels, mm.Items[1].PixelShape = make([]byte, 12*8), [2]uint32{12, 2}
	}
	return mm
}

func TestSGLangMM(t *testing.T) {
	in := sglangMM(testMM(true))
	require.NotNil(t, in)
	assert.Equal(t, []uint32{28, 2}, in.GetPixelValues().GetShape(), "one batch: rows of both items")
	assert.Len(t, in.GetPixelValues().GetData(), 28*8)
	g := in.GetModelSpecificTensors()[GridKey]
	assert.Equal(t, []uint32{2, 3}, g.GetShape())
	assert.EqualValues(t, 6, binary.LittleEndian.Uint64(g.GetData()[40:]))
	assert.EqualValues(t, 151655, in.GetImTokenId())
	assert.EqualValues(t, 10, in.GetMmPlaceholders()[1].GetOffset())
	assert.Nil(t, sglangMM(nil))

	ws := sglangMM(&ports.GRPCMultimodal{WorkerSide: true, Items: []ports.GRPCMediaItem{{Modality: "image", URL: "http://x/a.png"}}})
	assert.Equal(t, []string{"http://x/a.png"}, ws.GetImageUrls())
	assert.Nil(t, ws.GetPixelValues())
}

func TestTokenSpeedMM(t *testing.T) {
	in := tokenspeedMM(testMM(true))
	require.Len(t, in.GetItems(), 2)
	it := in.GetItems()[1]
	assert.Equal(t, "0c0d", hex.EncodeToString(it.GetContentHash()))
	assert.Equal(t, commonpb.Modality_IMAGE, it.GetModality())
	assert.Equal(t, []uint32{12, 2}, it.GetEncoderInput().GetShape())
	assert.EqualValues(t, 151655, it.GetPlaceholderTokenId())
	assert.EqualValues(t, 3, it.GetPlaceholders()[0].GetLength())
	assert.Equal(t, []uint32{1, 3}, it.GetModelSpecificTensors()[GridKey].GetShape())

	clone := tokenspeedMM(testMM(false))
	assert.Nil(t, clone.GetItems()[0].GetEncoderInput(), "no encoder_input on a pixel-free clone")
	assert.NotEmpty(t, clone.GetItems()[0].GetContentHash())
}

func TestVLLMMM(t *testing.T) {
	req := &vllmpb.GenerateRequest{}
	vllmMM(req, testMM(true))
	in := req.GetMmInputs()
	assert.Equal(t, []string{"0a0b", "0c0d"}, in.GetMmHashes())
	assert.Equal(t, []uint32{28, 2}, in.GetPixelValues().GetShape())
	assert.Equal(t, map[string]string{PixelKey: GridKey}, in.GetFlatKeys())
	assert.Equal(t, []string{GridKey}, in.GetBatchedKeys())

	req = &vllmpb.GenerateRequest{}
	vllmMM(req, testMM(false)) // IdentityOnly
	in = req.GetMmInputs()
	assert.Nil(t, in.GetPixelValues())
	assert.Empty(t, in.GetFlatKeys(), "pixel_values' flat entry goes with it")
	assert.NotNil(t, in.GetModelSpecificTensors()[GridKey])
	assert.Len(t, in.GetMmPlaceholders(), 2)

	req = &vllmpb.GenerateRequest{}
	vllmMM(req, &ports.GRPCMultimodal{HashesOnly: true, Items: []ports.GRPCMediaItem{{Modality: "image", Hash: "ff"}}})
	in = req.GetMmInputs()
	assert.Equal(t, []string{"ff"}, in.GetMmHashes())
	assert.Nil(t, in.ImTokenId)
	assert.Empty(t, in.GetMmPlaceholders())
	assert.Empty(t, in.GetModelSpecificTensors())

	req = &vllmpb.GenerateRequest{}
	vllmMM(req, &ports.GRPCMultimodal{WorkerSide: true, Items: []ports.GRPCMediaItem{{Modality: "image", URL: "data:x"}}})
	assert.Nil(t, req.GetMmInputs())
	assert.Equal(t, "data:x", req.GetMediaRefs().GetItems()[0].GetUrl())

	// media_identity back to engine-neutral form.
	req = &vllmpb.GenerateRequest{}
	vllmMM(req, testMM(false))
	id := vllmIdentity(&vllmpb.MediaIdentity{PromptTokenIds: []uint32{1, 2}, MmInputs: req.GetMmInputs()})
	require.NotNil(t, id.MM)
	assert.Equal(t, []uint32{1, 2}, id.PromptIDs)
	require.Len(t, id.MM.Items, 2)
	assert.Equal(t, [3]int64{1, 2, 6}, *id.MM.Items[1].Grid)
	assert.Equal(t, 10, id.MM.Items[1].Offset)
	assert.Nil(t, vllmIdentity(nil))
}

// One image's rows go out as they are (tens of MB not copied again); several are joined
// once, in order; items without pixels are skipped.
func TestPixelBatchCopiesOnlyToJoin(t *testing.T) {
	a, b := []byte{1, 2, 3, 4}, []byte{5, 6, 7, 8}
	shape, data, ok := pixelBatch([]ports.GRPCMediaItem{{Pixels: a, PixelShape: [2]uint32{1, 1}}, {Hash: "no pixels"}})
	require.True(t, ok)
	assert.Equal(t, []uint32{1, 1}, shape)
	assert.Same(t, &a[0], &data[0], "a single item's rows are not copied")

	shape, data, ok = pixelBatch([]ports.GRPCMediaItem{{Pixels: a, PixelShape: [2]uint32{1, 1}}, {Pixels: b, PixelShape: [2]uint32{1, 1}}})
	require.True(t, ok)
	assert.Equal(t, []uint32{2, 1}, shape)
	assert.Equal(t, []byte{1, 2, 3, 4, 5, 6, 7, 8}, data)
	assert.Equal(t, len(data), cap(data), "one exact allocation")

	_, _, ok = pixelBatch([]ports.GRPCMediaItem{{Hash: "x"}})
	assert.False(t, ok)
}
