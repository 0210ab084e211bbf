package grpcsim

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"hash/fnv"
	"net"
	"strconv"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	tokenspeedpb "github.com/smg-go/smg/adapters/engine/grpcengine/pb/tokenspeed"
	tokenspeedencoderpb "github.com/smg-go/smg/adapters/engine/grpcengine/pb/tokenspeedencoder"
)

// EPD in the simulator (grpc.md §1.13; seed "EPD"):
//
//   - An encode instance (role encode) takes each EncodeRequest's single item, "encodes" it
//     to Embedding(content_hash, pixels) and keeps the embedding on its bootstrap port
//     under "embed:<room>" until a prefill takes it (or HandoffTimeout passes: unmatched).
//     An item without pixels, or not exactly one item and one room, is INVALID_ARGUMENT.
//   - A prefill with encode_bootstrap_info takes every item's embedding from
//     bootstrap_host:bootstrap_port by room (long-polled; DEADLINE_EXCEEDED after
//     HandoffTimeout) and checks it is the item's content; an item without an encode
//     rendezvous is encoded locally from its pixels (INVALID_ARGUMENT when it has none).
//   - The prompt's media digest (MediaDigest over the item embeddings, in item order, in
//     place of the pixels' PixelDigest) goes with the KV to the decode, whose tokens are
//     MMHandoffTokens of it, so the output tells which media reached the prefill, in which
//     order.

// mediaItem is one TokenSpeed MultimodalItem as the simulator reads it.
type mediaItem struct {
	hash   []byte
	pixels []byte // encoder_input inline bytes; nil = none
}

// encodeRef is one encode_bootstrap_info entry.
type encodeRef struct {
	index int
	host  string
	port  int
	room  int64
}

func tokenspeedMedia(r *tokenspeedpb.GenerateRequest) ([]mediaItem, []encodeRef) {
	var media []mediaItem
	for _, it := range r.GetMmInputs().GetItems() {
		m := mediaItem{hash: it.GetContentHash()}
		if in := it.GetEncoderInput(); in != nil {
			m.pixels = in.GetInline()
			if m.pixels == nil {
				m.pixels = []byte{}
			}
		}
		media = append(media, m)
	}
	var refs []encodeRef
	for _, e := range r.GetEncodeBootstrapInfo().GetItems() {
		refs = append(refs, encodeRef{index: int(e.GetItemIndex()), host: e.GetBootstrapHost(), port: int(e.GetBootstrapPort()), room: e.GetBootstrapRoom()})
	}
	return media, refs
}

// Embedding is the simulated vision tower: a digest of an item's content hash and pixel
// bytes (FNV-1a 64).
func Embedding(contentHash, pixels []byte) uint64 {
	h := fnv.New64a()
	_, _ = h.Write(contentHash)
	_, _ = h.Write([]byte{0})
	_, _ = h.Write(pixels)
	return h.Sum64()
}

// MediaDigest folds a prompt's item embeddings, in item order, into the value generated
// tokens depend on; 0 for no items.
func MediaDigest(embeddings []uint64) uint64 {
	if len(embeddings) == 0 {
		return 0
	}
	h := fnv.New64a()
	var b [8]byte
	for _, e := range embeddings {
		binary.LittleEndian.PutUint64(b[:], e)
		_, _ = h.Write(b[:])
	}
	return h.Sum64() | 1 // never 0
}

// embeddings is the EPD step of a Generate: a prefill whose request names encode
// rendezvous gathers every item's embedding, from the encode workers where the request
// names one, else from the item's own pixels, and sets req.mm's media digest to
// MediaDigest of them (the KV carries it to the decode). Without rendezvous it does
// nothing (the pixels are the media digest, mm.go).
func (s *Server) embeddings(ctx context.Context, req *genRequest) error {
	if len(req.encode) == 0 {
		return nil
	}
	s.recordRefs(len(req.encode))
	if s.cfg.Role != RolePrefill {
		return status.Error(codes.InvalidArgument, "encode_bootstrap_info is for prefill workers")
	}
	refs := map[int]encodeRef{}
	for _, e := range req.encode {
		if e.index < 0 || e.index >= len(req.media) {
			return status.Errorf(codes.InvalidArgument, "encode_bootstrap_info item_index %d out of range (%d mm items)", e.index, len(req.media))
		}
		if _, dup := refs[e.index]; dup {
			return status.Errorf(codes.InvalidArgument, "encode_bootstrap_info names item %d twice", e.index)
		}
		refs[e.index] = e
	}
	out := make([]uint64, len(req.media))
	for i, it := range req.media {
		e, ok := refs[i]
		if !ok {
			if it.pixels == nil {
				return status.Errorf(codes.InvalidArgument, "mm item %d has no encoder_input and no encode rendezvous", i)
			}
			out[i] = Embedding(it.hash, it.pixels)
			continue
		}
		emb, err := s.receiveEmbedding(ctx, e, it)
		if err != nil {
			return err
		}
		out[i] = emb
	}
	if req.mm != nil {
		req.mm.encoded = MediaDigest(out)
	}
	return nil
}

// receiveEmbedding takes item it's embedding from the encode worker e names.
func (s *Server) receiveEmbedding(ctx context.Context, e encodeRef, it mediaItem) (uint64, error) {
	base := "http://" + net.JoinHostPort(strings.Trim(e.host, "[]"), strconv.Itoa(e.port))
	fctx, cancel := context.WithTimeout(ctx, s.cfg.HandoffTimeout)
	defer cancel()
	p, err := s.fetchKV(fctx, base, embedKey(e.room), "")
	if err != nil {
		if ctx.Err() != nil {
			return 0, s.cancelled(ctx)
		}
		s.c.unmatched.Add(1)
		return 0, status.Errorf(codes.DeadlineExceeded, "embedding receive timed out: item %d, room %d at %s: %v", e.index, e.room, base, err)
	}
	if p.Hash != hex.EncodeToString(it.hash) {
		return 0, status.Errorf(codes.Internal, "embedding for item %d (room %d) is of content %s, the item is %s", e.index, e.room, p.Hash, hex.EncodeToString(it.hash))
	}
	s.c.received.Add(1)
	s.recordEmbedding(p.Hash)
	return p.Digest, nil
}

func embedKey(room int64) string { return "embed:" + strconv.FormatInt(room, 10) }

// encoderService is a TokenSpeed encode worker (TokenSpeedEncoder.Encode).
type encoderService struct {
	tokenspeedencoderpb.UnimplementedTokenSpeedEncoderServer
	s *Server
}

// Encode fails with an instance status fault (Config.Faults "status:<code>"), validates
// the job, keeps the item's embedding for the prefill under its room and
// answers accepted=true (the transfer happens when the prefill asks).
func (x *encoderService) Encode(ctx context.Context, r *tokenspeedencoderpb.EncodeRequest) (*tokenspeedencoderpb.EncodeResponse, error) {
	s := x.s
	s.c.requests.Add(1)
	md, _ := metadata.FromIncomingContext(ctx)
	faults, err := requestFaults(md, s.cfg.Role, s.faults)
	if err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	for _, f := range faults {
		if f.Kind == FaultStatus { // the only fault an encode worker models
			s.c.errors.Add(1)
			return nil, status.Errorf(codeForHTTP(f.Arg), "injected fault: status %d", f.Arg)
		}
	}
	items, rooms := r.GetMmInputs().GetItems(), r.GetItems()
	if len(items) != 1 || len(rooms) != 1 {
		s.c.errors.Add(1)
		return nil, status.Errorf(codes.InvalidArgument, "an EncodeRequest carries one item and one room (got %d items, %d rooms)", len(items), len(rooms))
	}
	in := items[0].GetEncoderInput()
	if in == nil || len(in.GetInline()) == 0 {
		s.c.errors.Add(1)
		return nil, status.Error(codes.InvalidArgument, "mm item has no encoder_input to encode")
	}
	if !strings.HasPrefix(r.GetRequestId(), "encode-") {
		s.c.errors.Add(1)
		return nil, status.Errorf(codes.InvalidArgument, "request_id %q is not encode-<id>", r.GetRequestId())
	}
	hash := hex.EncodeToString(items[0].GetContentHash())
	// Recorded before the embedding is offered: once kept, a prefill can take it and the
	// request can finish, and a test reading /sim/stats then must see this encode.
	s.recordEncoded(hash, r.GetRequestId(), rooms[0].GetBootstrapRoom())
	if err := s.keep(embedKey(rooms[0].GetBootstrapRoom()), kvPayload{Digest: Embedding(items[0].GetContentHash(), in.GetInline()), Hash: hash, EngineID: s.engineID()}); err != nil {
		s.c.errors.Add(1)
		return nil, err
	}
	return &tokenspeedencoderpb.EncodeResponse{Accepted: true}, nil
}

// EPDStats are what an instance saw of EPD, as /sim/stats shows them ("epd"; the last
// epdLogCap entries of each list): encode rendezvous a prefill received, the content
// hashes an encode worker encoded (with the EncodeRequest ids) and those whose embeddings
// a prefill received, in item order.
type EPDStats struct {
	EncodeRefs      int64    `json:"encode_refs"`
	EncodedHashes   []string `json:"encoded_hashes,omitempty"`
	EncodeIDs       []string `json:"encode_request_ids,omitempty"`
	EncodeRooms     []int64  `json:"encode_rooms,omitempty"`
	EmbeddingHashes []string `json:"embedding_hashes,omitempty"`
}

const epdLogCap = 64

func push(l []string, v string) []string {
	l = append(l, v)
	if len(l) > epdLogCap {
		l = l[len(l)-epdLogCap:]
	}
	return l
}

func (s *Server) recordRefs(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.media.EncodeRefs += int64(n)
}

func (s *Server) recordEncoded(hash, id string, room int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.media.EncodeRooms = append(s.media.EncodeRooms, room)
	if len(s.media.EncodeRooms) > epdLogCap {
		s.media.EncodeRooms = s.media.EncodeRooms[1:]
	}
	s.media.EncodedHashes = push(s.media.EncodedHashes, hash)
	s.media.EncodeIDs = push(s.media.EncodeIDs, id)
}

func (s *Server) recordEmbedding(hash string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.media.EmbeddingHashes = push(s.media.EmbeddingHashes, hash)
}

func (s *Server) mediaSnapshot() EPDStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.media
	m.EncodedHashes = append([]string(nil), m.EncodedHashes...)
	m.EncodeIDs = append([]string(nil), m.EncodeIDs...)
	m.EmbeddingHashes = append([]string(nil), m.EmbeddingHashes...)
	m.EncodeRooms = append([]int64(nil), m.EncodeRooms...)
	return m
}
