package grpcfleet_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/app/config"
	"github.com/smg-go/smg/test/sim/grpcsim"
)

// SGLang: the prefill gets the pixels (mm_inputs with pixel_values and image_grid_thw), the
// decode no mm_inputs at all; the answer derives from the prefill's pixels through the KV
// and the prompt is expanded per the model's preprocessor_config.json.
func TestMMSGLangPrefillPixelsDecodeNone(t *testing.T) {
	t.Parallel()
	g, p, d := mmFleet(t, grpcsim.EngineSGLang, nil, nil)
	img := testPNG(t, 64, 48, 1)
	r := g.Post(t, "/v1/chat/completions", map[string]any{"model": pdModel, "max_tokens": 8,
		"messages": mmMessages("What is in the picture?", dataURL(img))}, nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	ids, items, mix := mmExpect(t, "What is in the picture?", img)
	require.Equal(t, 12, items[0].Tokens, "preprocessor_config.json min_pixels applied (the defaults give 4)")
	assert.Equal(t, detok(t, grpcsim.MMHandoffTokens(ids, mix, 8)), chatContent(t, r, 0), "decode text derives from the prefill's pixels")
	assert.EqualValues(t, len(ids), r.Object(t)["usage"].(map[string]any)["prompt_tokens"], "expanded prompt")
	ps, ds := p.Stats().MM, d.Stats().MM
	assert.EqualValues(t, 1, ps.Requests)
	assert.EqualValues(t, 1, ps.PixelItems, "prefill got the pixels")
	assert.EqualValues(t, 1, ps.GridItems)
	assert.EqualValues(t, 1, ps.Placeholders)
	assert.Zero(t, ds.Requests, "SGLang decode gets no mm_inputs")
	handoffClean(t, p, d, 1)
}

// TokenSpeed: two images (a data URL and a loopback http URL); the decode keeps each
// item's metadata (hash, placeholders, placeholder token, grid) without encoder_input.
func TestMMTokenSpeedDecodeKeepsItemMetadata(t *testing.T) {
	t.Parallel()
	img1, img2 := testPNG(t, 64, 48, 2), testPNG(t, 100, 60, 3)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write(img2) }))
	defer srv.Close()
	g, p, d := mmFleet(t, grpcsim.EngineTokenSpeed, nil, nil)
	r := g.Post(t, "/v1/chat/completions", map[string]any{"model": pdModel, "max_tokens": 6,
		"messages": mmMessages("Compare them.", dataURL(img1), srv.URL+"/b.png")}, nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	// The http image renders the same prompt as its data URL would (the URL is not in it).
	ids, _, mix := mmExpect(t, "Compare them.", img1, img2)
	assert.Equal(t, detok(t, grpcsim.MMHandoffTokens(ids, mix, 6)), chatContent(t, r, 0))
	ps, ds := p.Stats().MM, d.Stats().MM
	assert.EqualValues(t, 2, ps.PixelItems, "prefill got both images' pixels")
	assert.Equal(t, []string{sha(img1), sha(img2)}, ps.LastHashes)
	assert.EqualValues(t, 2, ds.Items)
	assert.Zero(t, ds.PixelItems, "decode got no pixels")
	assert.EqualValues(t, 2, ds.MetadataItems)
	assert.EqualValues(t, 2, ds.HashedItems)
	assert.EqualValues(t, 2, ds.Placeholders)
	assert.EqualValues(t, 2, ds.GridItems)
	assert.Equal(t, []string{sha(img1), sha(img2)}, ds.LastHashes, "decode got each item's identity")
	handoffClean(t, p, d, 1)
}

// Multimodal n>1 keeps one dispatch on SGLang and TokenSpeed (no fan-out): one room, one
// prefill and one decode request carrying n.
func TestMMNoFanOut(t *testing.T) {
	t.Parallel()
	for _, engine := range []string{grpcsim.EngineSGLang, grpcsim.EngineTokenSpeed} {
		t.Run(engine, func(t *testing.T) {
			t.Parallel()
			g, p, d := mmFleet(t, engine, nil, nil)
			img := testPNG(t, 64, 48, 4)
			r := g.Post(t, "/v1/chat/completions", map[string]any{"model": pdModel, "max_tokens": 4, "n": 3,
				"messages": mmMessages("Describe.", dataURL(img))}, nil)
			require.Equal(t, http.StatusOK, r.Status, string(r.Body))
			require.Len(t, r.Object(t)["choices"].([]any), 3)
			ids, _, mix := mmExpect(t, "Describe.", img)
			assert.Equal(t, detok(t, grpcsim.MMHandoffTokens(ids, mix, 4)), chatContent(t, r, 0))
			assert.EqualValues(t, 1, p.Stats().Requests, "one prefill request")
			assert.EqualValues(t, 1, d.Stats().Requests, "one decode request")
			handoffClean(t, p, d, 1)
		})
	}
}

// vLLM n<=1: the decode form is IdentityOnly: hashes, placeholders, im_token_id and the
// M-RoPE grid, no pixel_values; the KV comes from the prefill that had the pixels.
func TestMMVLLMDecodeIdentityOnly(t *testing.T) {
	t.Parallel()
	g, p, d := mmFleet(t, grpcsim.EngineVLLM, nil, nil)
	img := testPNG(t, 64, 48, 5)
	r := g.Post(t, "/v1/chat/completions", map[string]any{"model": pdModel, "max_tokens": 7,
		"messages": mmMessages("What colour?", dataURL(img))}, nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	ids, _, mix := mmExpect(t, "What colour?", img)
	assert.Equal(t, detok(t, grpcsim.MMHandoffTokens(ids, mix, 7)), chatContent(t, r, 0))
	ps, ds := p.Stats().MM, d.Stats().MM
	assert.EqualValues(t, 1, ps.PixelItems)
	assert.Zero(t, ds.PixelItems, "decode got no pixel_values")
	assert.EqualValues(t, 1, ds.GridItems, "decode keeps image_grid_thw")
	assert.EqualValues(t, 1, ds.Placeholders)
	assert.Equal(t, []string{sha(img)}, ds.LastHashes)
	handoffClean(t, p, d, 1)
}

// vLLM n>1: no handoff, so the decode form is Full: decode gets the pixels and computes
// the prompt itself.
func TestMMVLLMDecodeFullForNSamples(t *testing.T) {
	t.Parallel()
	g, p, d := mmFleet(t, grpcsim.EngineVLLM, nil, nil)
	img := testPNG(t, 64, 48, 6)
	r := g.Post(t, "/v1/chat/completions", map[string]any{"model": pdModel, "max_tokens": 3, "n": 2,
		"messages": mmMessages("Two takes.", dataURL(img))}, nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	require.Len(t, r.Object(t)["choices"].([]any), 2)
	assert.EqualValues(t, 1, p.Stats().MM.PixelItems)
	assert.EqualValues(t, 1, d.Stats().MM.PixelItems, "decode got the whole mm payload")
	assert.EqualValues(t, 1, d.Stats().RecomputedPrompts, "no handoff with n>1")
}

// --language-model-only vLLM decode pools: M-RoPE (the Qwen2-VL grid), multimodal n>1 and
// worker-side references are refused with non-retryable 400s before any leg is contacted.
func TestMMVLLMLanguageModelOnlyRefusals(t *testing.T) {
	t.Parallel()
	lmo := func(role string, c *grpcsim.Config) {
		c.LanguageModelOnly = role == grpcsim.RoleDecode
		c.VLLMServicer = grpcsim.VLLMServicer111 // worker-side media references
	}
	img := testPNG(t, 64, 48, 7)
	cases := []struct {
		name, code string
		n          int
		worker     bool
	}{
		{"mrope", "pd_decode_language_model_only_mrope", 1, false},
		{"n_samples", "pd_decode_language_model_only_n_samples", 2, false},
		{"media_refs", "pd_decode_language_model_only_media_refs", 1, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			g, p, d := mmFleet(t, grpcsim.EngineVLLM, lmo, func(cfg *config.Config) {
				if c.worker {
					cfg.MMProcessing = config.MMProcessingWorker
				}
			})
			r := g.Post(t, "/v1/chat/completions", map[string]any{"model": pdModel, "max_tokens": 3, "n": c.n,
				"messages": mmMessages("Hi.", dataURL(img))}, nil)
			require.Equal(t, http.StatusBadRequest, r.Status, string(r.Body))
			assert.Equal(t, c.code, errCode(t, r))
			assert.Zero(t, p.Stats().Requests+d.Stats().Requests, "no leg contacted, no retry")
			// Text-only requests still go to the same pool.
			r = g.Post(t, "/v1/chat/completions", map[string]any{"model": pdModel, "max_tokens": 2,
				"messages": []map[string]string{{"role": "user", "content": "Hi."}}}, nil)
			require.Equal(t, http.StatusOK, r.Status, string(r.Body))
		})
	}
}

// A pixel-free vLLM decode leg whose prefill returned no kv_transfer_params is a 502
// pd_decode_missing_kv_transfer_params; the decode is never contacted (it could not
// recompute the prompt without its pixels) and the request is not retried.
func TestMMVLLMMissingKVParams(t *testing.T) {
	t.Parallel()
	g, p, d := mmFleet(t, grpcsim.EngineVLLM, func(role string, c *grpcsim.Config) {
		if role == grpcsim.RolePrefill {
			c.Faults = []string{grpcsim.FaultNoKVParams}
		}
	}, nil)
	img := testPNG(t, 64, 48, 8)
	r := g.Post(t, "/v1/chat/completions", map[string]any{"model": pdModel, "max_tokens": 3,
		"messages": mmMessages("Hi.", dataURL(img))}, nil)
	require.Equal(t, http.StatusBadGateway, r.Status, string(r.Body))
	assert.Equal(t, "pd_decode_missing_kv_transfer_params", errCode(t, r))
	assert.EqualValues(t, 1, p.Stats().Requests, "one prefill, no retry")
	assert.Zero(t, d.Stats().Requests, "decode never contacted")
}

// --mm-processing worker on vLLM: the prefill gets media_refs with the unexpanded prompt
// and returns its media_identity; the decode gets the identity (expanded ids, hashes,
// placeholders) instead of the references.
func TestMMVLLMWorkerSideIdentityRelay(t *testing.T) {
	t.Parallel()
	// media_refs and media_identity exist only in the v1.11-era vLLM servicer.
	newer := func(_ string, c *grpcsim.Config) { c.VLLMServicer = grpcsim.VLLMServicer111 }
	g, p, d := mmFleet(t, grpcsim.EngineVLLM, newer, func(cfg *config.Config) { cfg.MMProcessing = config.MMProcessingWorker })
	url := "http://127.0.0.1:1/never-fetched-by-the-gateway.png"
	r := g.Post(t, "/v1/chat/completions", map[string]any{"model": pdModel, "max_tokens": 5,
		"messages": mmMessages("Look.", url)}, nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	ps, ds := p.Stats().MM, d.Stats().MM
	assert.EqualValues(t, 1, ps.MediaRefs, "prefill got the reference")
	assert.Zero(t, ps.PixelItems, "the gateway prepared nothing")
	assert.Zero(t, ds.MediaRefs, "decode got the identity instead of the reference")
	assert.EqualValues(t, 1, ds.HashedItems)
	assert.EqualValues(t, 1, ds.Placeholders)
	// The expected text: the prompt as the prefill expanded it, the reference's digest.
	m, _ := qwenVL(t)
	msgs := []byte(`[{"role":"user","content":[{"type":"image_url","image_url":{"url":"` + url + `"}},{"type":"text","text":"Look."}]}]`)
	_, ids, err := m.ChatPrompt(chatInput(msgs))
	require.NoError(t, err)
	var exp []uint32
	for _, id := range ids {
		if id == grpcsim.ImagePadID {
			for range grpcsim.RefTokens {
				exp = append(exp, id)
			}
			continue
		}
		exp = append(exp, id)
	}
	assert.Equal(t, detok(t, grpcsim.MMHandoffTokens(exp, grpcsim.RefsDigest([]string{url}), 5)), chatContent(t, r, 0))
	handoffClean(t, p, d, 1)
}

// --mm-processing worker with SGLang or TokenSpeed PD (prepared media only): 400
// multimodal_not_supported before any leg.
func TestMMParallelWorkerSideRefused(t *testing.T) {
	t.Parallel()
	for _, engine := range []string{grpcsim.EngineTokenSpeed, grpcsim.EngineSGLang} {
		t.Run(engine, func(t *testing.T) {
			t.Parallel()
			g, p, d := mmFleet(t, engine, nil, func(cfg *config.Config) { cfg.MMProcessing = config.MMProcessingWorker })
			r := g.Post(t, "/v1/chat/completions", map[string]any{"model": pdModel, "max_tokens": 3,
				"messages": mmMessages("Hi.", dataURL(testPNG(t, 64, 48, 9)))}, nil)
			require.Equal(t, http.StatusBadRequest, r.Status, string(r.Body))
			assert.Equal(t, "multimodal_not_supported", errCode(t, r))
			assert.Zero(t, p.Stats().Requests+d.Stats().Requests)
		})
	}
}

// Media the gateway cannot fetch or decode is a 400 invalid_request before any leg.
func TestMMInvalidMedia(t *testing.T) {
	t.Parallel()
	g, p, d := mmFleet(t, grpcsim.EngineSGLang, nil, nil)
	for name, url := range map[string]string{
		"bad base64": "data:image/png;base64,@@@@",
		"not image":  dataURL([]byte("plain text, not an image")),
		"scheme":     "file:///etc/hostname",
		"refused":    "http://127.0.0.1:1/x.png",
	} {
		r := g.Post(t, "/v1/chat/completions", map[string]any{"model": pdModel, "max_tokens": 3,
			"messages": mmMessages("Hi.", url)}, nil)
		require.Equal(t, http.StatusBadRequest, r.Status, name+": "+string(r.Body))
		assert.Equal(t, "invalid_request", errCode(t, r), name)
	}
	assert.Zero(t, p.Stats().Requests+d.Stats().Requests)
}

// Streaming chat and /v1/messages with a base64 image source take the same media path.
func TestMMStreamAndMessages(t *testing.T) {
	t.Parallel()
	g, p, d := mmFleet(t, grpcsim.EngineTokenSpeed, nil, nil)
	img := testPNG(t, 64, 48, 10)
	ids, _, mix := mmExpect(t, "Stream it.", img)
	want := detok(t, grpcsim.MMHandoffTokens(ids, mix, 5))

	r := g.Post(t, "/v1/chat/completions", map[string]any{"model": pdModel, "max_tokens": 5, "stream": true,
		"messages": mmMessages("Stream it.", dataURL(img))}, nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	events, done := sseData(t, r.Body)
	require.True(t, done)
	var got string
	for _, ev := range events {
		for _, c := range ev["choices"].([]any) {
			if s, ok := c.(map[string]any)["delta"].(map[string]any)["content"].(string); ok {
				got += s
			}
		}
	}
	assert.Equal(t, want, got)

	r = g.Post(t, "/v1/messages", map[string]any{"model": pdModel, "max_tokens": 5, "messages": []map[string]any{{
		"role": "user", "content": []map[string]any{
			{"type": "image", "source": map[string]string{"type": "base64", "media_type": "image/png", "data": dataURL(img)[len("data:image/png;base64,"):]}},
			{"type": "text", "text": "Stream it."}}}}}, nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	content := r.Object(t)["content"].([]any)
	require.NotEmpty(t, content)
	assert.Equal(t, want, content[0].(map[string]any)["text"], "the same prompt and pixels as the chat request")
	assert.EqualValues(t, 2, p.Stats().MM.PixelItems)
	assert.Zero(t, d.Stats().MM.PixelItems)
	handoffClean(t, p, d, 2)
}

// The context-length check counts the expanded prompt: a request whose text fits the
// window but whose image tokens do not is refused before any leg.
func TestMMContextLengthCountsImageTokens(t *testing.T) {
	t.Parallel()
	img := testPNG(t, 64, 48, 11)
	ids, items, _ := mmExpect(t, "Fits?", img)
	unexpanded := len(ids) - items[0].Tokens + 1
	window := len(ids) - 1 // the text alone fits, the expanded prompt is one over
	require.Less(t, unexpanded, window)
	g, p, d := mmFleet(t, grpcsim.EngineSGLang, func(_ string, c *grpcsim.Config) { c.MaxModelLen = window }, nil)
	r := g.Post(t, "/v1/chat/completions", map[string]any{"model": pdModel, "max_tokens": 2,
		"messages": mmMessages("Fits?", dataURL(img))}, nil)
	require.Equal(t, http.StatusBadRequest, r.Status, string(r.Body))
	assert.Equal(t, "context_length_exceeded", errCode(t, r))
	assert.Zero(t, p.Stats().Requests+d.Stats().Requests)
}

// --mm-processing worker with a published vLLM servicer (no mm_media_ref_schemes): it would
// drop media_refs as an unknown field and answer without the image, so the request is a
// 400 multimodal_not_supported before any leg; text still flows.
func TestMMVLLMWorkerSideRefusedByPublishedServicer(t *testing.T) {
	t.Parallel()
	g, p, d := mmFleet(t, grpcsim.EngineVLLM, nil, func(cfg *config.Config) { cfg.MMProcessing = config.MMProcessingWorker })
	r := g.Post(t, "/v1/chat/completions", map[string]any{"model": pdModel, "max_tokens": 3,
		"messages": mmMessages("Hi.", "http://127.0.0.1:1/never-fetched.png")}, nil)
	require.Equal(t, http.StatusBadRequest, r.Status, string(r.Body))
	assert.Equal(t, "multimodal_not_supported", errCode(t, r))
	assert.Contains(t, string(r.Body), "mm_media_ref_schemes")
	assert.Zero(t, p.Stats().Requests+d.Stats().Requests, "no leg contacted")
	r = g.Post(t, "/v1/chat/completions", map[string]any{"model": pdModel, "max_tokens": 2,
		"messages": []map[string]string{{"role": "user", "content": "Hi."}}}, nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
}
