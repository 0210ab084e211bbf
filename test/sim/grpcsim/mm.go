package grpcsim

import (
	"crypto/sha256"
	"encoding/hex"
	"hash/fnv"
	"slices"
	"sync"
	"sync/atomic"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	commonpb "github.com/smg-go/smg/adapters/engine/grpcengine/pb/common"
	sglangpb "github.com/smg-go/smg/adapters/engine/grpcengine/pb/sglang"
	tokenspeedpb "github.com/smg-go/smg/adapters/engine/grpcengine/pb/tokenspeed"
	vllmpb "github.com/smg-go/smg/adapters/engine/grpcengine/pb/vllm"
)

// ImagePadID is the placeholder id the simulator expands for worker-side media
// references (Qwen2-VL <|image_pad|>); each reference takes RefTokens copies.
const (
	ImagePadID = 151655
	RefTokens  = 4
)

// mmInput is what a Generate request carried of multimodal input, engine-neutral.
type mmInput struct {
	items        int // media items (tensors or references)
	pixelItems   int // items with a pixel payload
	hashes       []string
	grids        int // items with an image_grid_thw row
	placeholders int // placeholder ranges
	refs         []string
	pixels       []byte // the pixel payload bytes, concatenated
	padToken     bool   // an im_token_id / placeholder_token_id came with it
	// identity is what a vLLM prefill returns about the references it expanded.
	identity *vllmpb.MediaIdentity
	// encoded is the EPD media digest (MediaDigest of the items' embeddings, encode.go);
	// 0 = not EPD.
	encoded uint64
}

// PixelDigest is the simulator's fingerprint of a pixel payload (FNV-1a of the float32
// bytes); a prefill mixes it into the KV it hands over, so the decode's tokens tell which
// pixels the prefill saw. 0 for none.
func PixelDigest(pixels []byte) uint64 {
	if len(pixels) == 0 {
		return 0
	}
	h := fnv.New64a()
	_, _ = h.Write(pixels)
	return h.Sum64()
}

// RefsDigest fingerprints worker-side media references (the simulator does not fetch them).
func RefsDigest(urls []string) uint64 {
	if len(urls) == 0 {
		return 0
	}
	h := fnv.New64a()
	for _, u := range urls {
		_, _ = h.Write([]byte(u))
		_, _ = h.Write([]byte{0})
	}
	return h.Sum64()
}

// MMHandoffTokens are the n ids a decode generates for (expanded) prompt ids when the KV
// arrived through a handoff from a prefill that saw media with digest mix (PixelDigest or
// RefsDigest); mix 0 is HandoffTokens.
func MMHandoffTokens(ids []uint32, mix uint64, n int) []uint32 {
	return tokensFrom(Digest(ids)^mix, 'k', n)
}

// mix is the media digest a leg computes from what it received.
func (m *mmInput) mix() uint64 {
	if m == nil {
		return 0
	}
	if m.encoded != 0 {
		return m.encoded
	}
	if d := PixelDigest(m.pixels); d != 0 {
		return d
	}
	return RefsDigest(m.refs)
}

func sglangMMInput(in *sglangpb.MultimodalInputs) *mmInput {
	if in == nil {
		return nil
	}
	m := &mmInput{refs: in.GetImageUrls(), placeholders: len(in.GetMmPlaceholders()), padToken: in.ImTokenId != nil}
	m.items = max(len(in.GetModalities()), len(m.refs))
	if pv := in.GetPixelValues(); pv != nil && len(pv.GetData()) > 0 {
		m.pixels = pv.GetData()
		m.pixelItems = m.items
	}
	if g := in.GetModelSpecificTensors()["image_grid_thw"]; g != nil && len(g.GetShape()) > 0 {
		m.grids = int(g.GetShape()[0])
	}
	return m
}

func tokenspeedMMInput(in *tokenspeedpb.MultimodalInputs) *mmInput {
	if in == nil || len(in.GetItems()) == 0 {
		return nil
	}
	m := &mmInput{items: len(in.GetItems()), padToken: true}
	for _, it := range in.GetItems() {
		if len(it.GetContentHash()) > 0 {
			m.hashes = append(m.hashes, hex.EncodeToString(it.GetContentHash()))
		}
		m.placeholders += len(it.GetPlaceholders())
		m.padToken = m.padToken && it.PlaceholderTokenId != nil
		if b := it.GetEncoderInput().GetInline(); len(b) > 0 {
			m.pixelItems++
			m.pixels = append(m.pixels, b...)
		}
		if it.GetModelSpecificTensors()["image_grid_thw"] != nil {
			m.grids++
		}
	}
	return m
}

// vllmMMInput reads a vLLM request's multimodal input. A published servicer (newer false)
// predates media_refs=10: its proto drops the field as unknown, so the references are never
// seen and the prompt runs without them.
func vllmMMInput(r *vllmpb.GenerateRequest, newer bool) *mmInput {
	in, refs := r.GetMmInputs(), r.GetMediaRefs()
	if !newer {
		refs = nil
	}
	if in == nil && refs == nil {
		return nil
	}
	m := &mmInput{hashes: in.GetMmHashes(), placeholders: len(in.GetMmPlaceholders()), padToken: in != nil && in.ImTokenId != nil}
	for _, ref := range refs.GetItems() {
		m.refs = append(m.refs, ref.GetUrl())
	}
	m.items = max(len(m.hashes), len(m.refs))
	if pv := in.GetPixelValues(); pv != nil && len(pv.GetInline()) > 0 {
		m.pixels = pv.GetInline()
		m.pixelItems = m.items
	}
	if g := in.GetModelSpecificTensors()["image_grid_thw"]; g != nil && len(g.GetShape()) > 0 {
		m.grids = int(g.GetShape()[0])
	}
	return m
}

// checkMM applies the engine's multimodal rules before the handoff and returns the request
// with worker-side references expanded:
//
//   - a vLLM --language-model-only engine takes hashes only: pixels, grids or placeholders
//     are INVALID_ARGUMENT, and so are media references;
//   - a TokenSpeed item without its content hash, placeholders or placeholder token id is
//     INVALID_ARGUMENT (decode needs the per-item metadata);
//   - references (vLLM media_refs, SGLang image_urls) are "processed" here: each
//     ImagePadID in the prompt becomes RefTokens copies (a count mismatch is
//     INVALID_ARGUMENT); a vLLM prefill returns the expanded ids and the items as its
//     media_identity.
func (s *Server) checkMM(req *genRequest) error {
	m := req.mm
	if m == nil {
		return nil
	}
	s.c.mm.record(m)
	if s.cfg.Engine == EngineVLLM && s.cfg.LanguageModelOnly {
		if len(m.pixels) > 0 || m.grids > 0 || m.placeholders > 0 || len(m.refs) > 0 {
			return status.Errorf(codes.InvalidArgument, "this engine runs --language-model-only: it takes expanded ids and per-item hashes only (got %d pixel items, %d grids, %d placeholders, %d refs)",
				m.pixelItems, m.grids, m.placeholders, len(m.refs))
		}
	}
	if s.cfg.Engine == EngineTokenSpeed && (len(m.hashes) != m.items || m.placeholders != m.items || !m.padToken) {
		return status.Errorf(codes.InvalidArgument, "mm_inputs items need content_hash, placeholders and placeholder_token_id (%d items, %d hashes, %d placeholders)",
			m.items, len(m.hashes), m.placeholders)
	}
	if len(m.refs) == 0 {
		return nil
	}
	pads := 0
	for _, id := range req.ids {
		if id == ImagePadID {
			pads++
		}
	}
	if pads != len(m.refs) {
		return status.Errorf(codes.InvalidArgument, "the prompt has %d image placeholders for %d media references", pads, len(m.refs))
	}
	var out []uint32
	id := &vllmpb.MultimodalInputs{Modality: commonpb.Modality_IMAGE}
	k := 0
	for _, t := range req.ids {
		if t != ImagePadID {
			out = append(out, t)
			continue
		}
		id.MmPlaceholders = append(id.MmPlaceholders, &vllmpb.PlaceholderRange{Offset: uint32(len(out)), Length: RefTokens})
		sum := sha256.Sum256([]byte(m.refs[k]))
		id.MmHashes = append(id.MmHashes, hex.EncodeToString(sum[:]))
		for range RefTokens {
			out = append(out, ImagePadID)
		}
		k++
	}
	pad := uint32(ImagePadID)
	id.ImTokenId = &pad
	req.ids = out
	if s.cfg.Engine == EngineVLLM && s.cfg.Role == RolePrefill {
		m.identity = &vllmpb.MediaIdentity{PromptTokenIds: out, MmInputs: id}
	}
	return nil
}

// MMStats are the multimodal counters of /sim/stats ("mm"): what the instance's legs
// received, so a test can tell "decode got no pixels" and "prefill got this image".
type MMStats struct {
	// Requests counts Generate RPCs that carried any multimodal input.
	Requests int64 `json:"requests"`
	// Items counts media items received; PixelItems those with a pixel payload;
	// MetadataItems those without (a pixel-free clone); GridItems those with an
	// image_grid_thw row; HashedItems those with a content hash; MediaRefs references.
	Items         int64 `json:"items"`
	PixelItems    int64 `json:"pixel_items"`
	MetadataItems int64 `json:"metadata_items"`
	GridItems     int64 `json:"grid_items"`
	HashedItems   int64 `json:"hashed_items"`
	Placeholders  int64 `json:"placeholders"`
	MediaRefs     int64 `json:"media_refs"`
	// LastHashes are the content hashes of the last multimodal request; LastPixelDigest
	// its PixelDigest in hex ("" = no pixels).
	LastHashes      []string `json:"last_hashes"`
	LastPixelDigest string   `json:"last_pixel_digest"`
}

type mmCounters struct {
	requests, items, pixelItems, metaItems, gridItems, hashed, places, refs atomic.Int64
	mu                                                                      sync.Mutex
	lastHashes                                                              []string
	lastDigest                                                              string
}

func (c *mmCounters) record(m *mmInput) {
	c.requests.Add(1)
	c.items.Add(int64(m.items))
	c.pixelItems.Add(int64(m.pixelItems))
	c.metaItems.Add(int64(m.items - m.pixelItems - len(m.refs)))
	c.gridItems.Add(int64(m.grids))
	c.hashed.Add(int64(len(m.hashes)))
	c.places.Add(int64(m.placeholders))
	c.refs.Add(int64(len(m.refs)))
	c.mu.Lock()
	c.lastHashes = slices.Clone(m.hashes)
	c.lastDigest = ""
	if d := PixelDigest(m.pixels); d != 0 {
		c.lastDigest = hex.EncodeToString([]byte{byte(d >> 56), byte(d >> 48), byte(d >> 40), byte(d >> 32), byte(d >> 24), byte(d >> 16), byte(d >> 8), byte(d)})
	}
	c.mu.Unlock()
}

func (c *mmCounters) snapshot() MMStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return MMStats{Requests: c.requests.Load(), Items: c.items.Load(), PixelItems: c.pixelItems.Load(),
		MetadataItems: c.metaItems.Load(), GridItems: c.gridItems.Load(), HashedItems: c.hashed.Load(),
		Placeholders: c.places.Load(), MediaRefs: c.refs.Load(), LastHashes: slices.Clone(c.lastHashes), LastPixelDigest: c.lastDigest}
}

func (c *mmCounters) reset() {
	for _, a := range []*atomic.Int64{&c.requests, &c.items, &c.pixelItems, &c.metaItems, &c.gridItems, &c.hashed, &c.places, &c.refs} {
		a.Store(0)
	}
	c.mu.Lock()
	c.lastHashes, c.lastDigest = nil, ""
	c.mu.Unlock()
}
