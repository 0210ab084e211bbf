package grpcsim_test

import (
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	commonpb "github.com/smg-go/smg/adapters/engine/grpcengine/pb/common"
	tokenspeedpb "github.com/smg-go/smg/adapters/engine/grpcengine/pb/tokenspeed"
	vllmpb "github.com/smg-go/smg/adapters/engine/grpcengine/pb/vllm"
	"github.com/smg-go/smg/test/sim/grpcsim"
)

func vTok(ids []uint32) *vllmpb.GenerateRequest_Tokenized {
	return &vllmpb.GenerateRequest_Tokenized{Tokenized: &vllmpb.TokenizedInput{InputIds: ids}}
}

// A --language-model-only vLLM engine reports supports_vision=false and refuses media
// tensors, placeholders and references; hashes alone pass and are recorded.
func TestMMVLLMLanguageModelOnly(t *testing.T) {
	s := start(t, grpcsim.Config{Engine: grpcsim.EngineVLLM, Role: grpcsim.RoleDecode, LanguageModelOnly: true})
	c := vllmpb.NewVllmEngineClient(dial(t, s))
	mi, err := c.GetModelInfo(ctxT(t, 5*time.Second), &vllmpb.GetModelInfoRequest{})
	require.NoError(t, err)
	assert.False(t, mi.GetSupportsVision())

	r := vGenerate(ctxT(t, 5*time.Second), c, &vllmpb.GenerateRequest{RequestId: "a", Input: vTok(prompt(6)),
		SamplingParams: &vllmpb.SamplingParams{MaxTokens: u32(2)},
		MmInputs:       &vllmpb.MultimodalInputs{MmHashes: []string{"h"}, MmPlaceholders: []*vllmpb.PlaceholderRange{{Offset: 1, Length: 2}}}})
	require.Equal(t, codes.InvalidArgument, status.Code(r.err), "%v", r.err)

	r = vGenerate(ctxT(t, 5*time.Second), c, &vllmpb.GenerateRequest{RequestId: "b", Input: vTok(prompt(6)),
		SamplingParams: &vllmpb.SamplingParams{MaxTokens: u32(2)},
		MmInputs:       &vllmpb.MultimodalInputs{MmHashes: []string{"h1", "h2"}, Modality: commonpb.Modality_IMAGE}})
	require.NoError(t, r.err)
	st := httpStats(t, s).MM
	assert.EqualValues(t, 2, st.Requests)
	assert.Equal(t, []string{"h1", "h2"}, st.LastHashes)
	assert.EqualValues(t, 3, st.MetadataItems, "1 + 2 items without pixels")
	assert.Zero(t, st.PixelItems)
}

// A TokenSpeed item needs its content hash, placeholders and placeholder token id.
func TestMMTokenSpeedItemMetadataRequired(t *testing.T) {
	s := start(t, grpcsim.Config{Engine: grpcsim.EngineTokenSpeed, Role: grpcsim.RolePrefill})
	c := tokenspeedpb.NewTokenSpeedSchedulerClient(dial(t, s))
	gen := func(it *tokenspeedpb.MultimodalItem) error {
		st, err := c.Generate(ctxT(t, 5*time.Second), &tokenspeedpb.GenerateRequest{RequestId: "x",
			Tokenized: &tokenspeedpb.TokenizedInput{InputIds: prompt(8)}, SamplingParams: &tokenspeedpb.SamplingParams{MaxNewTokens: u32(1)},
			MmInputs: &tokenspeedpb.MultimodalInputs{Items: []*tokenspeedpb.MultimodalItem{it}}})
		if err != nil {
			return err
		}
		for {
			if _, err := st.Recv(); err != nil {
				if err == io.EOF {
					return nil
				}
				return err
			}
		}
	}
	pad := uint32(grpcsim.ImagePadID)
	ok := &tokenspeedpb.MultimodalItem{Modality: commonpb.Modality_IMAGE, ContentHash: []byte{1, 2}, PlaceholderTokenId: &pad,
		Placeholders: []*tokenspeedpb.PlaceholderRange{{Offset: 2, Length: 3}},
		EncoderInput: &tokenspeedpb.TensorData{Shape: []uint32{1, 2}, Dtype: "float32", Payload: &tokenspeedpb.TensorData_Inline{Inline: make([]byte, 8)}}}
	require.NoError(t, gen(ok))
	assert.NotEmpty(t, s.Stats().MM.LastPixelDigest)
	noHash := &tokenspeedpb.MultimodalItem{Modality: commonpb.Modality_IMAGE, PlaceholderTokenId: &pad,
		Placeholders: []*tokenspeedpb.PlaceholderRange{{Offset: 2, Length: 3}}}
	require.Equal(t, codes.InvalidArgument, status.Code(gen(noHash)))
	st := s.Stats().MM
	assert.EqualValues(t, 2, st.Requests)
	assert.EqualValues(t, 1, st.PixelItems)
	assert.Empty(t, st.LastPixelDigest, "the last request carried no pixels")
}

// Worker-side references: a vLLM prefill expands each <|image_pad|> to RefTokens copies and
// returns the expanded prompt and the items as its media_identity; a count mismatch is
// INVALID_ARGUMENT.
func TestMMVLLMMediaRefsIdentity(t *testing.T) {
	s := start(t, grpcsim.Config{Engine: grpcsim.EngineVLLM, Role: grpcsim.RolePrefill, VLLMServicer: grpcsim.VLLMServicer111})
	c := vllmpb.NewVllmEngineClient(dial(t, s))
	ids := []uint32{5, grpcsim.ImagePadID, 6}
	refs := &vllmpb.MediaRefs{Items: []*vllmpb.MediaRef{{Modality: commonpb.Modality_IMAGE, Url: "http://127.0.0.1/a.png"}}}
	r := vGenerate(ctxT(t, 5*time.Second), c, &vllmpb.GenerateRequest{RequestId: "r", Input: vTok(ids),
		SamplingParams: &vllmpb.SamplingParams{MaxTokens: u32(2)}, MediaRefs: refs})
	require.NoError(t, r.err)
	id := r.complete.GetMediaIdentity()
	require.NotNil(t, id)
	assert.Equal(t, []uint32{5, grpcsim.ImagePadID, grpcsim.ImagePadID, grpcsim.ImagePadID, grpcsim.ImagePadID, 6}, id.GetPromptTokenIds())
	require.Len(t, id.GetMmInputs().GetMmHashes(), 1)
	assert.EqualValues(t, 1, id.GetMmInputs().GetMmPlaceholders()[0].GetOffset())
	assert.EqualValues(t, 6, r.complete.GetPromptTokens(), "the prompt as expanded")

	r = vGenerate(ctxT(t, 5*time.Second), c, &vllmpb.GenerateRequest{RequestId: "r2", Input: vTok([]uint32{5, 6}),
		SamplingParams: &vllmpb.SamplingParams{MaxTokens: u32(2)}, MediaRefs: refs})
	require.Equal(t, codes.InvalidArgument, status.Code(r.err))
}

// The published vLLM servicer predates media_refs: the field is dropped as unknown, the
// prompt runs unexpanded and no media_identity comes back.
func TestMMVLLMPublishedServicerIgnoresMediaRefs(t *testing.T) {
	s := start(t, grpcsim.Config{Engine: grpcsim.EngineVLLM, Role: grpcsim.RolePrefill})
	c := vllmpb.NewVllmEngineClient(dial(t, s))
	refs := &vllmpb.MediaRefs{Items: []*vllmpb.MediaRef{{Modality: commonpb.Modality_IMAGE, Url: "http://127.0.0.1/a.png"}}}
	r := vGenerate(ctxT(t, 5*time.Second), c, &vllmpb.GenerateRequest{RequestId: "r", Input: vTok([]uint32{5, grpcsim.ImagePadID, 6}),
		SamplingParams: &vllmpb.SamplingParams{MaxTokens: u32(2)}, MediaRefs: refs})
	require.NoError(t, r.err)
	assert.Nil(t, r.complete.GetMediaIdentity())
	assert.EqualValues(t, 3, r.complete.GetPromptTokens(), "the prompt as sent: the reference was never read")
	assert.Zero(t, httpStats(t, s).MM.MediaRefs)
}
