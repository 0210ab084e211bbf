package pipeline

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/app/config"
	"github.com/smg-go/smg/domain/errs"
	"github.com/smg-go/smg/domain/handoff"
	"github.com/smg-go/smg/domain/media"
	"github.com/smg-go/smg/domain/worker"
	"github.com/smg-go/smg/ports"
)

func mmTestJob(n int) *job {
	j := testJob(handoff.RouteChat, n, nil, "x")
	j.mm = &mmJob{padID: 9,
		items: []media.Item{
			{Modality: "image", Hash: "aa", PixelValues: []float32{1, 2}, Shape: [2]int64{1, 2}, GridTHW: [3]int64{1, 2, 2}, Tokens: 1},
			{Modality: "image", Hash: "bb", PixelValues: []float32{3, 4}, Shape: [2]int64{1, 2}, GridTHW: [3]int64{1, 2, 2}, Tokens: 1}},
		places: []media.Placeholder{{Offset: 1, Length: 1}, {Offset: 4, Length: 1}},
		refs:   []media.Ref{{Modality: "image", URL: "data:a"}, {Modality: "image", URL: "data:b"}}}
	return j
}

func planMM(t *testing.T, rt worker.Runtime, proto protocol, n int, decodeLabels map[string]string) ([]unit, error) {
	t.Helper()
	pl := New(Deps{Config: config.Default()})
	j := mmTestJob(n)
	p, d := live(rt, worker.RolePrefill, nil), live(rt, worker.RoleDecode, decodeLabels)
	us := pl.plan(j, proto, "req", p, d)
	return us, attachMedia(j, proto, us, d)
}

func requirePixels(t *testing.T, mm *ports.GRPCMultimodal, want bool) {
	t.Helper()
	require.NotNil(t, mm)
	for _, it := range mm.Items {
		assert.Equal(t, want, it.Pixels != nil, "item %s pixels", it.Hash)
	}
}

func TestAttachMediaParallel(t *testing.T) {
	us, err := planMM(t, worker.RuntimeSGLang, parallelSGLang, 3, nil)
	require.NoError(t, err)
	require.Len(t, us, 1, "multimodal n>1 keeps one dispatch")
	assert.EqualValues(t, 3, us[0].dLeg.Sampling.N)
	requirePixels(t, us[0].pLeg.MM, true)
	assert.Nil(t, us[0].dLeg.MM, "SGLang decode: mm_inputs removed")

	us, err = planMM(t, worker.RuntimeTokenSpeed, parallelTokenSpeed, 1, nil)
	require.NoError(t, err)
	requirePixels(t, us[0].pLeg.MM, true)
	requirePixels(t, us[0].dLeg.MM, false)
	d := us[0].dLeg.MM
	assert.Equal(t, []string{"aa", "bb"}, []string{d.Items[0].Hash, d.Items[1].Hash})
	assert.Equal(t, 4, d.Items[1].Offset)
	assert.NotNil(t, d.Items[0].Grid)
	assert.EqualValues(t, 9, d.PlaceholderTokenID)
	assert.NotNil(t, us[0].pLeg.MM.Items[0].Pixels, "the clone leaves the prefill's items alone")
}

func TestAttachMediaVLLMForms(t *testing.T) {
	us, err := planMM(t, worker.RuntimeVLLM, sequentialVLLM, 1, nil)
	require.NoError(t, err)
	requirePixels(t, us[0].dLeg.MM, false) // IdentityOnly
	assert.NotNil(t, us[0].dLeg.MM.Items[0].Grid)
	assert.True(t, stripped(us[0].dLeg.MM))

	us, err = planMM(t, worker.RuntimeVLLM, sequentialVLLM, 2, nil)
	require.NoError(t, err)
	requirePixels(t, us[0].dLeg.MM, true) // Full
	assert.False(t, stripped(us[0].dLeg.MM))
}

func TestAttachMediaLanguageModelOnly(t *testing.T) {
	lmo := map[string]string{"supports_vision": "false"}
	_, err := planMM(t, worker.RuntimeVLLM, sequentialVLLM, 1, lmo)
	e, ok := errs.As(err)
	require.True(t, ok, "%v", err)
	assert.Equal(t, "pd_decode_language_model_only_mrope", e.Code)
	assert.Equal(t, 400, e.Status)
	assert.False(t, e.Retryable)

	_, err = planMM(t, worker.RuntimeVLLM, sequentialVLLM, 2, map[string]string{"language_model_only": "true"})
	e, _ = errs.As(err)
	require.NotNil(t, e)
	assert.Equal(t, "pd_decode_language_model_only_n_samples", e.Code)

	// TextPlusHashes (the form such a pool gets for a model without M-RoPE grids): hashes
	// and modality only.
	pl := New(Deps{Config: config.Default()})
	p, d := live(worker.RuntimeVLLM, worker.RolePrefill, nil), live(worker.RuntimeVLLM, worker.RoleDecode, lmo)
	lm := hashesOnly(mmTestJob(1).mm.full())
	assert.True(t, lm.HashesOnly)
	assert.Equal(t, []ports.GRPCMediaItem{{Modality: "image", Hash: "aa"}, {Modality: "image", Hash: "bb"}}, lm.Items)
	assert.True(t, stripped(lm))

	// Worker-side references on such a pool.
	j := mmTestJob(1)
	j.mm.workerSide = true
	us := pl.plan(j, sequentialVLLM, "req", p, d)
	e, _ = errs.As(attachMedia(j, sequentialVLLM, us, d))
	require.NotNil(t, e)
	assert.Equal(t, "pd_decode_language_model_only_media_refs", e.Code)
}

func TestRelayIdentity(t *testing.T) {
	pl := New(Deps{Config: config.Default()})
	p := live(worker.RuntimeVLLM, worker.RolePrefill, nil)
	refs := &ports.GRPCMultimodal{WorkerSide: true, Items: []ports.GRPCMediaItem{{Modality: "image", URL: "http://x"}}}
	id := &ports.GRPCMediaIdentity{PromptIDs: []uint32{1, 9, 9, 2}, MM: &ports.GRPCMultimodal{PlaceholderTokenID: 9,
		Items: []ports.GRPCMediaItem{{Modality: "image", Hash: "h", Offset: 1, Length: 2}}}}
	u := &unit{pLeg: ports.GRPCLeg{Worker: p}, identity: id}

	dec := ports.GRPCLeg{InputIDs: []uint32{1, 9, 2}, MM: refs, KVTransferJSON: `{"x":1}`}
	pl.relayIdentity(&dec, u, true)
	assert.Equal(t, []uint32{1, 9, 9, 2}, dec.InputIDs)
	assert.False(t, dec.MM.WorkerSide)
	assert.Equal(t, "h", dec.MM.Items[0].Hash)

	for name, c := range map[string]struct {
		kv    string
		relay bool
		id    *ports.GRPCMediaIdentity
	}{
		"no KV":        {"", true, id},
		"n>1":          {`{"x":1}`, false, id},
		"no identity":  {`{"x":1}`, true, nil},
		"empty prompt": {`{"x":1}`, true, &ports.GRPCMediaIdentity{MM: id.MM}},
	} {
		dec := ports.GRPCLeg{InputIDs: []uint32{1, 9, 2}, MM: refs, KVTransferJSON: c.kv}
		u.identity = c.id
		pl.relayIdentity(&dec, u, c.relay)
		assert.Equal(t, []uint32{1, 9, 2}, dec.InputIDs, name)
		assert.Same(t, refs, dec.MM, name+": the references stay")
	}
}
