package grpcfleet_test

import (
	"encoding/hex"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/fx"

	"github.com/smg-go/smg/app/config"
	"github.com/smg-go/smg/domain/media"
	"github.com/smg-go/smg/domain/text"
	"github.com/smg-go/smg/test/fleet"
	"github.com/smg-go/smg/test/sim/grpcsim"
)

// epdSims are the simulators of the seed's EPD example: nEncode TokenSpeed encode workers,
// one prefill and one decode, all serving the Qwen-VL fixture.
type epdSims struct {
	enc  []*grpcsim.Server
	p, d *grpcsim.Server
}

func startEPDSims(t *testing.T, nEncode int) epdSims {
	t.Helper()
	_, dir := qwenVL(t)
	mk := func(role string) grpcsim.Config {
		return grpcsim.Config{Engine: grpcsim.EngineTokenSpeed, Role: role, Model: pdModel, TokenizerPath: dir}
	}
	cfgs := []grpcsim.Config{mk(grpcsim.RolePrefill), mk(grpcsim.RoleDecode)}
	for range nEncode {
		cfgs = append(cfgs, mk(grpcsim.RoleEncode))
	}
	s := sims(t, cfgs...)
	return epdSims{p: s[0], d: s[1], enc: s[2:]}
}

// epdConfig is the seed's `smg launch --epd-disaggregation --encode <url> <port> ...
// --prefill <url> <port> --decode <url> --model-path ...` pointed at the simulators.
func (s epdSims) epdConfig(withEncode bool) config.Config {
	cfg := fleet.DefaultConfig()
	cfg.EPDDisaggregation = true // the command line sets PDDisaggregation with it
	if withEncode {
		for _, e := range s.enc {
			cfg.Encode = append(cfg.Encode, config.PrefillSpec{URL: e.URL(), BootstrapPort: port(e.BootstrapPort())})
		}
	}
	cfg.Prefill = []config.PrefillSpec{{URL: s.p.URL(), BootstrapPort: port(s.p.BootstrapPort())}}
	cfg.Decode = []string{s.d.URL()}
	cfg.ModelPath = pdModel
	return cfg
}

func startEPD(t *testing.T, s epdSims, cfg config.Config, workers int) *fleet.Gateway {
	t.Helper()
	m, _ := qwenVL(t)
	g := fleet.StartGateway(t, cfg, fx.Decorate(func(r *text.Registry) *text.Registry { r.Put(pdModel, m); return r }))
	g.WaitWorkers(t, workers)
	return g
}

// epdDigest is the media digest the simulated prefill folds from the items' embeddings.
func epdDigest(t *testing.T, items []media.Item) uint64 {
	t.Helper()
	embs := make([]uint64, len(items))
	for i := range items {
		h, err := hex.DecodeString(items[i].Hash)
		require.NoError(t, err)
		embs[i] = grpcsim.Embedding(h, items[i].PixelBytes())
	}
	return grpcsim.MediaDigest(embs)
}

// The seed's EPD example: a chat request with two images goes to two encode workers with
// two rooms (round_robin), the prefill takes both embeddings without pixels of its own,
// the decode text derives from the embeddings; a text-only request has no encode leg.
func TestEPDSeedLaunchTwoImagesAndTextOnly(t *testing.T) {
	t.Parallel()
	s := startEPDSims(t, 2)
	cfg := s.epdConfig(true)
	cfg.EncodePolicy = "round_robin"
	g := startEPD(t, s, cfg, 4)
	types := map[string]string{}
	for _, w := range g.Workers(t) {
		types[w.URL] = w.WorkerType + "/" + w.RuntimeType
	}
	assert.Equal(t, "encode/tokenspeed", types[s.enc[0].URL()])
	assert.Equal(t, "encode/tokenspeed", types[s.enc[1].URL()])

	img1, img2 := testPNG(t, 64, 48, 11), testPNG(t, 100, 60, 12)
	r := g.Post(t, "/v1/chat/completions", map[string]any{"model": pdModel, "max_tokens": 6,
		"messages": mmMessages("Compare them.", dataURL(img1), dataURL(img2))}, nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	ids, items, pixMix := mmExpect(t, "Compare them.", img1, img2)
	mix := epdDigest(t, items)
	assert.Equal(t, detok(t, grpcsim.MMHandoffTokens(ids, mix, 6)), chatContent(t, r, 0), "decode text derives from the encode workers' embeddings")
	assert.NotEqual(t, detok(t, grpcsim.MMHandoffTokens(ids, pixMix, 6)), chatContent(t, r, 0), "not from pixels on the prefill")

	// Each encode worker got one image with its pixels, under its own room.
	e0, e1 := s.enc[0].Stats().EPD, s.enc[1].Stats().EPD
	got := append(append([]string{}, e0.EncodedHashes...), e1.EncodedHashes...)
	assert.ElementsMatch(t, []string{sha(img1), sha(img2)}, got)
	require.Len(t, e0.EncodedHashes, 1, "round_robin: one item per encode worker")
	require.Len(t, e1.EncodedHashes, 1)
	require.Len(t, e0.EncodeRooms, 1)
	require.Len(t, e1.EncodeRooms, 1)
	assert.NotEqual(t, e0.EncodeRooms[0], e1.EncodeRooms[0], "two rooms")
	for _, id := range append(append([]string{}, e0.EncodeIDs...), e1.EncodeIDs...) {
		require.True(t, strings.HasPrefix(id, "encode-"), id)
		u, err := uuid.Parse(strings.TrimPrefix(id, "encode-"))
		require.NoError(t, err, id)
		assert.EqualValues(t, 7, u.Version(), id)
	}
	for _, e := range s.enc {
		assert.EqualValues(t, 1, e.Stats().HandoffsSent, "the prefill took the embedding")
		assert.Zero(t, e.PendingHandoffs())
	}

	// The prefill: both items in order, no pixels, two rendezvous, both embeddings received.
	ps, ds := s.p.Stats(), s.d.Stats()
	assert.EqualValues(t, 2, ps.EPD.EncodeRefs)
	assert.Equal(t, []string{sha(img1), sha(img2)}, ps.EPD.EmbeddingHashes)
	assert.EqualValues(t, 2, ps.MM.Items)
	assert.Zero(t, ps.MM.PixelItems, "the prefill lost its pixels to the encode workers")
	assert.EqualValues(t, 2, ps.MM.GridItems)
	assert.Equal(t, []string{sha(img1), sha(img2)}, ps.MM.LastHashes)
	assert.EqualValues(t, 2, ds.MM.Items)
	assert.Zero(t, ds.MM.PixelItems, "the decode got no pixels")
	assert.Zero(t, ds.EPD.EncodeRefs, "the decode gets no encode rendezvous")
	handoffClean(t, s.p, s.d, 1)

	// Text only: no encode leg at all.
	r = g.Post(t, "/v1/chat/completions", map[string]any{"model": pdModel, "max_tokens": 5,
		"messages": []map[string]any{{"role": "user", "content": "Just text."}}}, nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	tids := chatVLPrompt(t, "Just text.")
	assert.Equal(t, detok(t, grpcsim.HandoffTokens(tids, 5)), chatContent(t, r, 0))
	for _, e := range s.enc {
		assert.EqualValues(t, 1, e.Stats().Requests, "no Encode RPC for a text-only request")
	}
	assert.EqualValues(t, 2, s.p.Stats().EPD.EncodeRefs, "no rendezvous on the text-only prefill")
	assert.EqualValues(t, 2, s.p.Stats().Requests)
}

// chatVLPrompt is the prompt ids of a one-user-message chat under the Qwen-VL fixture.
func chatVLPrompt(t *testing.T, content string) []uint32 {
	t.Helper()
	m, _ := qwenVL(t)
	_, ids, err := m.ChatPrompt(text.ChatInput{Messages: []byte(`[{"role":"user","content":` + quote(content) + `}]`), AddGenerationPrompt: true})
	require.NoError(t, err)
	return ids
}

func quote(s string) string { return `"` + strings.ReplaceAll(s, `"`, `\"`) + `"` }

// consistent_hashing (the default) sends a repeated image to the same encode worker, in
// one request and across requests.
func TestEPDConsistentHashingKeepsAnImageOnOneEncodeWorker(t *testing.T) {
	t.Parallel()
	s := startEPDSims(t, 3)
	g := startEPD(t, s, s.epdConfig(true), 5)
	imgs := [][]byte{testPNG(t, 64, 48, 21), testPNG(t, 64, 48, 22), testPNG(t, 64, 48, 23), testPNG(t, 64, 48, 24)}
	for round := range 2 {
		for i, img := range imgs {
			r := g.Post(t, "/v1/chat/completions", map[string]any{"model": pdModel, "max_tokens": 2,
				"messages": mmMessages("Again?", dataURL(img), dataURL(img))}, nil)
			require.Equal(t, http.StatusOK, r.Status, "round %d image %d: %s", round, i, r.Body)
		}
	}
	owners := map[string][]int{}
	total := 0
	for wi, e := range s.enc {
		for _, h := range e.Stats().EPD.EncodedHashes {
			if !slices.Contains(owners[h], wi) {
				owners[h] = append(owners[h], wi)
			}
			total++
		}
	}
	assert.Equal(t, 16, total, "every item of every request was encoded")
	for i, img := range imgs {
		assert.Len(t, owners[sha(img)], 1, "image %d went to one encode worker: %v", i, owners[sha(img)])
	}
}

// Readiness needs an encode worker in EPD mode; one registered through the admin API
// (worker_type encode) makes the gateway ready and is listed by GET /workers.
func TestEPDReadinessNeedsAnEncodeWorker(t *testing.T) {
	t.Parallel()
	s := startEPDSims(t, 1)
	m, _ := qwenVL(t)
	g := fleet.StartGateway(t, s.epdConfig(false), fx.Decorate(func(r *text.Registry) *text.Registry { r.Put(pdModel, m); return r }))
	g.WaitWorkersHealthy(t, 2)
	r := g.Get(t, "/readiness")
	assert.Equal(t, http.StatusServiceUnavailable, r.Status, "prefill and decode ready, no encode worker: %s", r.Body)

	// Without an encode worker a request with media has no encode leg: 503 naming it.
	img := testPNG(t, 64, 48, 31)
	r = g.Post(t, "/v1/chat/completions", map[string]any{"model": pdModel, "max_tokens": 2,
		"messages": mmMessages("Hi?", dataURL(img))}, nil)
	assert.Equal(t, http.StatusServiceUnavailable, r.Status, string(r.Body))
	assert.Equal(t, "no_available_workers", errCode(t, r))
	assert.Contains(t, string(r.Body), "encode")
	assert.Zero(t, s.p.Stats().Requests, "no leg was contacted")

	// HTTP workers are refused in EPD mode, whatever their role.
	for _, role := range []string{"encode", "prefill", "decode"} {
		bad := g.Post(t, "/workers", map[string]any{"url": "http://127.0.0.1:1", "worker_type": role}, nil)
		assert.Equal(t, http.StatusBadRequest, bad.Status, "%s: %s", role, bad.Body)
	}

	g.Register(t, map[string]any{"url": s.enc[0].URL(), "worker_type": "encode", "bootstrap_port": s.enc[0].BootstrapPort()})
	g.WaitWorkers(t, 3)
	for _, w := range g.Workers(t) {
		if w.URL == s.enc[0].URL() {
			assert.Equal(t, "encode", w.WorkerType)
			assert.Equal(t, "tokenspeed", w.RuntimeType)
		}
	}
	r = g.Post(t, "/v1/chat/completions", map[string]any{"model": pdModel, "max_tokens": 2,
		"messages": mmMessages("Hi?", dataURL(img))}, nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	assert.Equal(t, []string{sha(img)}, s.enc[0].Stats().EPD.EncodedHashes)
}

// EPD mode does not serve /v1/responses (501), and with --mm-processing worker a request
// with media fails 400 multimodal_not_supported before any leg.
func TestEPDResponsesAndWorkerSideMedia(t *testing.T) {
	t.Parallel()
	s := startEPDSims(t, 1)
	cfg := s.epdConfig(true)
	cfg.MMProcessing = config.MMProcessingWorker
	g := startEPD(t, s, cfg, 3)

	r := g.Post(t, "/v1/responses", map[string]any{"model": pdModel, "input": "hello"}, nil)
	assert.Equal(t, http.StatusNotImplemented, r.Status, string(r.Body))
	assert.Equal(t, "not_supported", errCode(t, r))

	r = g.Post(t, "/v1/chat/completions", map[string]any{"model": pdModel, "max_tokens": 2,
		"messages": mmMessages("Hi?", dataURL(testPNG(t, 64, 48, 41)))}, nil)
	assert.Equal(t, http.StatusBadRequest, r.Status, string(r.Body))
	assert.Equal(t, "multimodal_not_supported", errCode(t, r))

	// Text only still works under --mm-processing worker.
	r = g.Post(t, "/v1/chat/completions", map[string]any{"model": pdModel, "max_tokens": 2,
		"messages": []map[string]any{{"role": "user", "content": "Hi"}}}, nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	assert.Zero(t, s.enc[0].Stats().Requests)
	assert.EqualValues(t, 1, s.p.Stats().Requests, "only the text-only request reached the prefill")
}

// A failed encode job is only logged by the gateway (fire-and-forget); the prefill's
// embedding wait times out and fails the request, blamed on the prefill leg.
func TestEPDFailedEncodeJobFailsThePrefillsEmbeddingWait(t *testing.T) {
	t.Parallel()
	_, dir := qwenVL(t)
	mk := func(role string) grpcsim.Config {
		return grpcsim.Config{Engine: grpcsim.EngineTokenSpeed, Role: role, Model: pdModel, TokenizerPath: dir,
			HandoffTimeout: 300 * time.Millisecond}
	}
	// The encode worker's side channel gives up on the room after 300 ms, so the prefill's
	// embedding wait ends then, long before the prefill's own side channel would let the
	// waiting decode go (5 s).
	enc := mk(grpcsim.RoleEncode)
	enc.Faults = []string{"status:500"}
	pre, dec := mk(grpcsim.RolePrefill), mk(grpcsim.RoleDecode)
	pre.HandoffTimeout, dec.HandoffTimeout = 5*time.Second, 20*time.Second
	ss := sims(t, pre, dec, enc)
	s := epdSims{p: ss[0], d: ss[1], enc: ss[2:]}
	cfg := s.epdConfig(true)
	cfg.DisableRetries = true
	g := startEPD(t, s, cfg, 3)
	start := time.Now()
	r := g.Post(t, "/v1/chat/completions", map[string]any{"model": pdModel, "max_tokens": 2,
		"messages": mmMessages("Hi?", dataURL(testPNG(t, 64, 48, 51)))}, nil)
	assert.Less(t, time.Since(start), faultBound, "bounded by the prefill's 300 ms embedding wait, not the 20 s handoff")
	assert.GreaterOrEqual(t, r.Status, 500, string(r.Body))
	assert.Equal(t, "prefill_worker_failed_to_start", errCode(t, r))
	assert.EqualValues(t, 1, s.enc[0].Stats().Requests, "the encode job was sent")
	assert.EqualValues(t, 1, s.enc[0].Stats().Errors)
	assert.Positive(t, s.p.Stats().UnmatchedRooms, "the prefill never got the embedding")
	assert.Empty(t, s.p.Stats().EPD.EmbeddingHashes)
	require.Eventually(t, func() bool { d := s.d.Stats(); return d.Aborted == 1 && d.AbortRPCs == 1 }, faultBound, 10*time.Millisecond,
		"the decode waiting for the failed prefill's KV is aborted: %+v", s.d.Stats())
	assert.Zero(t, s.d.Stats().Errors, "the decode's end is an abort, not an engine error")
	assert.EqualValues(t, 1, cbOutcomes(t, g, strings.TrimPrefix(s.p.URL(), "grpc://"), "failure"), "the prefill's breaker counts the failure")
	assert.Zero(t, cbOutcomes(t, g, strings.TrimPrefix(s.d.URL(), "grpc://"), "failure"), "the retired decode's breaker does not move")
}
