package grpcsim_test

import (
	"encoding/hex"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	tokenspeedpb "github.com/smg-go/smg/adapters/engine/grpcengine/pb/tokenspeed"
	tokenspeedencoderpb "github.com/smg-go/smg/adapters/engine/grpcengine/pb/tokenspeedencoder"
	"github.com/smg-go/smg/test/sim/grpcsim"
)

func mmItem(hash string, pixels []byte) *tokenspeedpb.MultimodalItem {
	h, _ := hex.DecodeString(hash)
	pad := uint32(grpcsim.ImagePadID)
	it := &tokenspeedpb.MultimodalItem{ContentHash: h, PlaceholderTokenId: &pad,
		Placeholders: []*tokenspeedpb.PlaceholderRange{{Offset: 1, Length: 2}}}
	if pixels != nil {
		it.EncoderInput = &tokenspeedpb.TensorData{Shape: []uint32{1, uint32(len(pixels))}, Dtype: "uint8",
			Payload: &tokenspeedpb.TensorData_Inline{Inline: pixels}}
	}
	return it
}

func encodeJob(id string, it *tokenspeedpb.MultimodalItem, room int64) *tokenspeedencoderpb.EncodeRequest {
	return &tokenspeedencoderpb.EncodeRequest{RequestId: id, MmInputs: &tokenspeedpb.MultimodalInputs{Items: []*tokenspeedpb.MultimodalItem{it}},
		Items: []*tokenspeedencoderpb.EncodeItemAssignment{{BootstrapRoom: room}}}
}

// Two encode workers each take one image; the prefill (without pixels) waits for both
// embeddings by room, and the decode's tokens are derived from them in item order.
func TestEPDPrefillTakesEachItemsEmbeddingFromItsEncodeWorker(t *testing.T) {
	t.Parallel()
	ts := grpcsim.Config{Engine: grpcsim.EngineTokenSpeed}
	e0c, e1c, pc, dc := ts, ts, ts, ts
	e0c.Role, e1c.Role, pc.Role, dc.Role = grpcsim.RoleEncode, grpcsim.RoleEncode, grpcsim.RolePrefill, grpcsim.RoleDecode
	e0, e1, p, d := start(t, e0c), start(t, e1c), start(t, pc), start(t, dc)
	ctx := ctxT(t, 10*time.Second)
	const hA, hB = "aa01", "bb02"
	pixA, pixB := []byte{1, 2, 3}, []byte{4, 5, 6, 7}

	// The prefill asks first: the embeddings are long-polled until the encoders have them.
	ids := prompt(12)
	kb := &tokenspeedpb.KvBootstrapInfo{BootstrapHost: "127.0.0.1", BootstrapPort: int32(p.BootstrapPort()), BootstrapRoom: 77}
	preq := tsReq("r1", ids, 5, false, kb)
	preq.MmInputs = &tokenspeedpb.MultimodalInputs{Items: []*tokenspeedpb.MultimodalItem{mmItem(hA, nil), mmItem(hB, nil)}}
	preq.EncodeBootstrapInfo = &tokenspeedpb.EncodeBootstrapInfo{Items: []*tokenspeedpb.EncodeItemBootstrapInfo{
		{ItemIndex: 0, BootstrapHost: "127.0.0.1", BootstrapPort: int32(e0.BootstrapPort()), BootstrapRoom: 11},
		{ItemIndex: 1, BootstrapHost: "127.0.0.1", BootstrapPort: int32(e1.BootstrapPort()), BootstrapRoom: 1 << 62}}}
	dreq := tsReq("r1", ids, 5, false, kb)
	dreq.MmInputs = preq.MmInputs
	pres, dres := make(chan tsResult, 1), make(chan tsResult, 1)
	go func() { pres <- tsGenerate(ctx, tokenspeedpb.NewTokenSpeedSchedulerClient(dial(t, p)), preq) }()
	go func() { dres <- tsGenerate(ctx, tokenspeedpb.NewTokenSpeedSchedulerClient(dial(t, d)), dreq) }()

	for _, j := range []struct {
		e    *grpcsim.Server
		job  *tokenspeedencoderpb.EncodeRequest
		want bool
	}{{e0, encodeJob("encode-a", mmItem(hA, pixA), 11), true}, {e1, encodeJob("encode-b", mmItem(hB, pixB), 1<<62), true}} {
		r, err := tokenspeedencoderpb.NewTokenSpeedEncoderClient(dial(t, j.e)).Encode(ctx, j.job)
		require.NoError(t, err)
		assert.Equal(t, j.want, r.GetAccepted())
	}
	pr, dr := <-pres, <-dres
	require.NoError(t, pr.err)
	require.NoError(t, dr.err)
	media := grpcsim.MediaDigest([]uint64{grpcsim.Embedding([]byte{0xaa, 0x01}, pixA), grpcsim.Embedding([]byte{0xbb, 0x02}, pixB)})
	assert.Equal(t, grpcsim.MMHandoffTokens(ids, media, 5), dr.complete.GetOutputIds())
	assert.NotEqual(t, grpcsim.HandoffTokens(ids, 5), dr.complete.GetOutputIds(), "the media changes the output")

	st0, st1, sp := httpStats(t, e0), httpStats(t, e1), httpStats(t, p)
	assert.Equal(t, []string{hA}, st0.EPD.EncodedHashes)
	assert.Equal(t, []string{"encode-a"}, st0.EPD.EncodeIDs)
	assert.Equal(t, []string{hB}, st1.EPD.EncodedHashes)
	assert.EqualValues(t, 1, st0.HandoffsSent)
	assert.Equal(t, []string{hA, hB}, sp.EPD.EmbeddingHashes)
	assert.EqualValues(t, 2, sp.MM.Items)
	assert.EqualValues(t, 0, sp.MM.PixelItems)
	assert.EqualValues(t, 2, sp.EPD.EncodeRefs)
	assert.Zero(t, e0.PendingHandoffs()+e1.PendingHandoffs()+p.PendingHandoffs())

	// The same images without EPD (pixels on the prefill) give the pixels' output.
	kb2 := &tokenspeedpb.KvBootstrapInfo{BootstrapHost: "127.0.0.1", BootstrapPort: int32(p.BootstrapPort()), BootstrapRoom: 78}
	preq2, dreq2 := tsReq("r2", ids, 5, false, kb2), tsReq("r2", ids, 5, false, kb2)
	preq2.MmInputs = &tokenspeedpb.MultimodalInputs{Items: []*tokenspeedpb.MultimodalItem{mmItem(hA, pixA), mmItem(hB, pixB)}}
	go func() { pres <- tsGenerate(ctx, tokenspeedpb.NewTokenSpeedSchedulerClient(dial(t, p)), preq2) }()
	dr2 := tsGenerate(ctx, tokenspeedpb.NewTokenSpeedSchedulerClient(dial(t, d)), dreq2)
	require.NoError(t, (<-pres).err)
	require.NoError(t, dr2.err)
	assert.Equal(t, grpcsim.MMHandoffTokens(ids, grpcsim.PixelDigest(append(append([]byte{}, pixA...), pixB...)), 5), dr2.complete.GetOutputIds())
}

func TestEPDEmbeddingTimeoutAndBadJobs(t *testing.T) {
	t.Parallel()
	e := start(t, grpcsim.Config{Engine: grpcsim.EngineTokenSpeed, Role: grpcsim.RoleEncode, HandoffTimeout: 200 * time.Millisecond})
	p := start(t, grpcsim.Config{Engine: grpcsim.EngineTokenSpeed, Role: grpcsim.RolePrefill, HandoffTimeout: 200 * time.Millisecond})
	ctx := ctxT(t, 10*time.Second)
	ec := tokenspeedencoderpb.NewTokenSpeedEncoderClient(dial(t, e))
	pcl := tokenspeedpb.NewTokenSpeedSchedulerClient(dial(t, p))

	// No encoder ever gets the job: the prefill gives up after its timeout.
	req := tsReq("t1", prompt(4), 3, false, nil)
	req.MmInputs = &tokenspeedpb.MultimodalInputs{Items: []*tokenspeedpb.MultimodalItem{mmItem("cc", nil)}}
	req.EncodeBootstrapInfo = &tokenspeedpb.EncodeBootstrapInfo{Items: []*tokenspeedpb.EncodeItemBootstrapInfo{
		{ItemIndex: 0, BootstrapHost: "127.0.0.1", BootstrapPort: int32(e.BootstrapPort()), BootstrapRoom: 5}}}
	r := tsGenerate(ctx, pcl, req)
	assert.Equal(t, codes.DeadlineExceeded, status.Code(r.err), "%v", r.err)
	assert.Contains(t, status.Convert(r.err).Message(), "embedding receive timed out")

	// The embedding of another image under the room is refused.
	_, err := ec.Encode(ctx, encodeJob("encode-x", mmItem("dd", []byte{9}), 6))
	require.NoError(t, err)
	req.EncodeBootstrapInfo.Items[0].BootstrapRoom = 6
	r = tsGenerate(ctx, pcl, req)
	assert.Equal(t, codes.Internal, status.Code(r.err), "%v", r.err)

	// A rendezvous for an item the request does not carry.
	req.EncodeBootstrapInfo.Items[0].ItemIndex = 1
	r = tsGenerate(ctx, pcl, req)
	assert.Equal(t, codes.InvalidArgument, status.Code(r.err), "%v", r.err)

	for name, job := range map[string]*tokenspeedencoderpb.EncodeRequest{
		"no pixels":   encodeJob("encode-y", mmItem("ee", nil), 7),
		"two rooms":   {RequestId: "encode-z", MmInputs: encodeJob("", mmItem("ee", []byte{1}), 0).MmInputs, Items: []*tokenspeedencoderpb.EncodeItemAssignment{{BootstrapRoom: 1}, {BootstrapRoom: 2}}},
		"bad id":      encodeJob("x-1", mmItem("ee", []byte{1}), 8),
		"room in use": encodeJob("encode-w", mmItem("ff", []byte{1}), 6+0*1),
	} {
		if name == "room in use" {
			_, err := ec.Encode(ctx, encodeJob("encode-v", mmItem("ff", []byte{1}), 9))
			require.NoError(t, err)
			job.Items[0].BootstrapRoom = 9
		}
		_, err := ec.Encode(ctx, job)
		assert.Equal(t, codes.InvalidArgument, status.Code(err), "%s: %v", name, err)
	}
	// Unclaimed embeddings expire and count as unmatched.
	require.Eventually(t, func() bool { return e.PendingHandoffs() == 0 }, waitFor, tick)
	assert.Positive(t, httpStats(t, e).UnmatchedRooms)
}
