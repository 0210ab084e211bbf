package grpcsim

import (
	"errors"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	commonpb "github.com/smg-go/smg/adapters/engine/grpcengine/pb/common"
	sglangpb "github.com/smg-go/smg/adapters/engine/grpcengine/pb/sglang"
	tokenspeedpb "github.com/smg-go/smg/adapters/engine/grpcengine/pb/tokenspeed"
	vllmpb "github.com/smg-go/smg/adapters/engine/grpcengine/pb/vllm"
	"github.com/smg-go/smg/test/sim/kvcache"
	"github.com/smg-go/smg/test/sim/kvevents"
)

// KVEvents is the instance's KV event publishers, one per DP rank (DPSize ranks, at
// least one), nil when KVEventsConfig does not enable them. A rank's publisher is the
// kvcache.Sink of that rank's cache.
func (s *Server) KVEvents() *kvevents.Set { return s.kvev }

// KVEventSink is rank r's kvcache.Sink, nil without events or for a rank the instance
// does not have.
func (s *Server) KVEventSink(r int) kvcache.Sink {
	if p := s.kvev.Rank(r); p != nil {
		return p
	}
	return nil
}

// streamRank is the rank SubscribeKvEvents streams: the instance's own DPRank (SMG's
// servicer bridges one rank's ZMQ publisher, endpoint_for_rank), 0 without DP.
func (s *Server) streamRank() int {
	if s.cfg.DPSize > 1 {
		return s.cfg.DPRank
	}
	return 0
}

// subscribeKvEvents is SubscribeKvEvents of every engine's service (common.proto): the
// stream rank's batches with the publisher's own sequence numbers. start_sequence_number
// 0 streams from now; > 0 first replays the buffered batches from it, and a cursor the
// buffer no longer holds (or beyond the next batch) is OUT_OF_RANGE, which SMG's router
// answers by clearing the worker's entries and resubscribing from 0. A subscriber that
// falls behind, or the kv-events-garbage fault, ends the stream with DATA_LOSS; Close with
// UNAVAILABLE. Without KV events the RPC is UNIMPLEMENTED, as for an engine without them
// (SMG's router then stops subscribing to that worker).
func (s *Server) subscribeKvEvents(req *commonpb.SubscribeKvEventsRequest, stream grpc.ServerStreamingServer[commonpb.KvEventBatch]) error {
	p := s.kvev.Rank(s.streamRank())
	if p == nil {
		return status.Error(codes.Unimplemented, "KV events are not enabled on this engine (start it with --kv-events-config)")
	}
	sub, err := p.Subscribe(req.GetStartSequenceNumber())
	if err != nil {
		return kvEventsStatus(err)
	}
	defer sub.Close()
	if err := stream.SendHeader(metadata.MD{}); err != nil {
		return err
	}
	for _, b := range sub.Backlog {
		if err := stream.Send(kvBatchProto(b)); err != nil {
			return err
		}
	}
	for {
		select {
		case b, ok := <-sub.C:
			if !ok {
				return kvEventsStatus(sub.Err())
			}
			if err := stream.Send(kvBatchProto(b)); err != nil {
				return err
			}
		case <-stream.Context().Done():
			return stream.Context().Err()
		case <-s.done:
			return status.Error(codes.Unavailable, "engine shutting down")
		}
	}
}

func kvEventsStatus(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, kvevents.ErrCursorExpired):
		return status.Error(codes.OutOfRange, err.Error())
	case errors.Is(err, kvevents.ErrFellBehind), errors.Is(err, kvevents.ErrUndecodable):
		return status.Error(codes.DataLoss, err.Error())
	}
	return status.Error(codes.Unavailable, err.Error())
}

// kvBatchProto converts a batch as SMG's servicer does (grpc_servicer/smg_grpc_servicer/
// kv_events.py convert_batch): one KvBlock per block hash with its block_size tokens,
// hashes as the low 64 bits reinterpreted as signed int64, lora_id only for a LoRA,
// parent_block_hash only when there is a parent, dp_rank always.
func kvBatchProto(b kvevents.Batch) *commonpb.KvEventBatch {
	out := &commonpb.KvEventBatch{SequenceNumber: b.Seq, Timestamp: b.TS, DpRank: proto.Int32(int32(b.DPRank))}
	for i, ev := range b.Events {
		pe := &commonpb.KvCacheEvent{EventId: b.FirstEventID + uint64(i)}
		switch {
		case ev.Stored != nil:
			st := &commonpb.KvBlocksStored{}
			if ev.Stored.HasParent {
				st.ParentBlockHash = proto.Int64(int64(ev.Stored.ParentBlockHash))
			}
			n := ev.Stored.BlockSize
			for j, h := range ev.Stored.BlockHashes {
				blk := &commonpb.KvBlock{BlockHash: int64(h), BlockSize: int32(n)}
				if lo, hi := j*n, (j+1)*n; n > 0 && hi <= len(ev.Stored.TokenIDs) {
					blk.TokenIds = ev.Stored.TokenIDs[lo:hi]
				}
				if ev.Stored.LoraID != 0 {
					blk.LoraId = proto.Int64(ev.Stored.LoraID)
				}
				st.Blocks = append(st.Blocks, blk)
			}
			pe.Data = &commonpb.KvCacheEvent_Stored{Stored: st}
		case ev.Removed != nil:
			rm := &commonpb.KvBlocksRemoved{}
			for _, h := range ev.Removed.BlockHashes {
				rm.BlockHashes = append(rm.BlockHashes, int64(h))
			}
			pe.Data = &commonpb.KvCacheEvent_Removed{Removed: rm}
		default:
			pe.Data = &commonpb.KvCacheEvent_Cleared{Cleared: &commonpb.KvCacheCleared{}}
		}
		out.Events = append(out.Events, pe)
	}
	return out
}

// SubscribeKvEvents streams the instance's KV events (see subscribeKvEvents).
func (v *sglangService) SubscribeKvEvents(req *commonpb.SubscribeKvEventsRequest, stream grpc.ServerStreamingServer[commonpb.KvEventBatch]) error {
	return v.s.subscribeKvEvents(req, stream)
}

// SubscribeKvEvents streams the instance's KV events (see subscribeKvEvents).
func (v *vllmService) SubscribeKvEvents(req *commonpb.SubscribeKvEventsRequest, stream grpc.ServerStreamingServer[commonpb.KvEventBatch]) error {
	return v.s.subscribeKvEvents(req, stream)
}

// SubscribeKvEvents streams the instance's KV events (see subscribeKvEvents).
func (v *tokenspeedService) SubscribeKvEvents(req *commonpb.SubscribeKvEventsRequest, stream grpc.ServerStreamingServer[commonpb.KvEventBatch]) error {
	return v.s.subscribeKvEvents(req, stream)
}

var (
	_ sglangpb.SglangSchedulerServer         = (*sglangService)(nil)
	_ vllmpb.VllmEngineServer                = (*vllmService)(nil)
	_ tokenspeedpb.TokenSpeedSchedulerServer = (*tokenspeedService)(nil)
)
