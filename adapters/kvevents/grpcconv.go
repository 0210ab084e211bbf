package kvevents

import (
	"strconv"

	commonpb "github.com/smg-go/smg/adapters/engine/grpcengine/pb/common"
	"github.com/smg-go/smg/domain/kvevent"
)

// fromProto converts a SubscribeKvEvents batch (smg common.proto KvEventBatch, reference
// §3.1). KvBlocksStored carries per-block size, LoRA and cache level; consecutive blocks
// agreeing on all three become one Stored event, each run chained after the previous
// run's last block. Hashes are int64 on this wire, reinterpreted as uint64.
func fromProto(pb *commonpb.KvEventBatch) kvevent.Batch {
	b := kvevent.Batch{Seq: pb.GetSequenceNumber(), Timestamp: pb.GetTimestamp()}
	if pb.DpRank != nil {
		b.DPRank, b.HasDPRank = int(pb.GetDpRank()), true
	}
	for _, e := range pb.GetEvents() {
		switch {
		case e.GetStored() != nil:
			b.Events = append(b.Events, storedRuns(e.GetStored())...)
		case e.GetRemoved() != nil:
			r := e.GetRemoved()
			ev := kvevent.Event{Kind: kvevent.Removed, Medium: medium(r.CacheLevel), Removed: make([]uint64, len(r.GetBlockHashes()))}
			for i, h := range r.GetBlockHashes() {
				ev.Removed[i] = uint64(h)
			}
			b.Events = append(b.Events, ev)
		case e.GetCleared() != nil:
			b.Events = append(b.Events, kvevent.Event{Kind: kvevent.Cleared})
		}
	}
	return b
}

func storedRuns(s *commonpb.KvBlocksStored) []kvevent.Event {
	var out []kvevent.Event
	parent, hasParent := uint64(s.GetParentBlockHash()), s.ParentBlockHash != nil
	for _, blk := range s.GetBlocks() {
		size := int(blk.GetBlockSize())
		if size <= 0 {
			size = len(blk.GetTokenIds())
		}
		med := medium(blk.CacheLevel)
		n := len(out)
		if n == 0 || out[n-1].BlockSize != size || out[n-1].Medium != med ||
			out[n-1].HasLoRAID != (blk.LoraId != nil) || out[n-1].LoRAID != blk.GetLoraId() {
			if n > 0 {
				last := out[n-1].Blocks
				parent, hasParent = last[len(last)-1].EngineHash, true
			}
			out = append(out, kvevent.Event{Kind: kvevent.Stored, BlockSize: size, Medium: med,
				Parent: parent, HasParent: hasParent, LoRAID: blk.GetLoraId(), HasLoRAID: blk.LoraId != nil})
			n++
		}
		out[n-1].Blocks = append(out[n-1].Blocks, kvevent.Block{EngineHash: uint64(blk.GetBlockHash()), Tokens: blk.GetTokenIds()})
	}
	return out
}

// medium names a gRPC cache level: unset or 0 is the default (GPU) tier, "".
func medium(level *int32) string {
	if level == nil || *level == 0 {
		return ""
	}
	return "L" + strconv.Itoa(int(*level))
}
