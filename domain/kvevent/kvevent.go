// Package kvevent is the engine-neutral shape of a KV-cache event stream: what vLLM's and
// SGLang's ZMQ publishers (msgpack KVEventBatch) and the SubscribeKvEvents gRPC stream
// (smg common.proto KvEventBatch) say about one engine's prefix cache, after decoding.
// Adapters (adapters/kvevents) produce it; the prefix index (domain/kvindex) consumes it.
//
// Wire facts: ../shared/reference/kv-routing.md §1.5 (vLLM fields), §2.2 (SGLang), §3.1
// (gRPC). Engine block hashes are opaque 64-bit values here: the gateway never recomputes
// them, it only uses them to find the block a later BlockRemoved names.
package kvevent

// Kind says what an Event reports.
type Kind uint8

// The event kinds.
const (
	// Stored: the engine cached Blocks, chained after Parent when HasParent.
	Stored Kind = iota + 1
	// Removed: the engine evicted the blocks named by Removed (engine hashes).
	Removed
	// Cleared: the engine dropped its whole prefix cache (AllBlocksCleared).
	Cleared
)

// String is the engine's class name of the kind ("BlockStored", ...), or "unknown".
func (k Kind) String() string {
	switch k {
	case Stored:
		return "BlockStored"
	case Removed:
		return "BlockRemoved"
	case Cleared:
		return "AllBlocksCleared"
	}
	return "unknown"
}

// Block is one cached block of a Stored event.
type Block struct {
	// EngineHash is the engine's block hash reduced to 64 bits: vLLM ints as sent (uint64),
	// SGLang's signed int64 reinterpreted, raw digest bytes read as the big-endian value of
	// their last 8 bytes (vLLM maybe_convert_block_hash; reference §1.6, §7.3).
	EngineHash uint64
	// Tokens are the block's token ids. Fewer than the event's BlockSize means a partial
	// block (SGLang's last page of a radix node, reference §2.3).
	Tokens []uint32
	// Extra is a fingerprint of the block's extra keys other than the LoRA name
	// (multimodal item ids and offsets, cache_salt, prompt-embeds digest; reference §1.6),
	// or 0 when the block has none. Two blocks with equal tokens but different Extra hold
	// different KV.
	Extra uint64
}

// Event is one decoded KV-cache event.
type Event struct {
	Kind Kind
	// Blocks are the stored blocks in chain order (Stored only).
	Blocks []Block
	// Parent is the engine hash of the block the first of Blocks follows; meaningful only
	// when HasParent (a chain from the root has no parent).
	Parent    uint64
	HasParent bool
	// BlockSize is the engine's block (page) size in tokens as the event states it; 0 when
	// the wire left it out.
	BlockSize int
	// LoRAName is the adapter name ("" for the base model); LoRAID is the deprecated
	// numeric id, meaningful when HasLoRAID.
	LoRAName  string
	LoRAID    int64
	HasLoRAID bool
	// Medium is the cache tier ("GPU", "CPU", ...; "" when unstated, which engines use for
	// the GPU tier). gRPC cache levels other than 0 appear as "L<level>".
	Medium string
	// Group is vLLM's KV-cache group index (hybrid models have several); 0 when absent.
	// Engine hashes are unique only within a group (reference §1.6).
	Group int
	// Removed are the engine hashes a Removed event names.
	Removed []uint64
}

// Batch is one published batch: a sequence number and its events in engine order.
type Batch struct {
	// Seq is the publisher's sequence number: +1 per batch, from 0 at engine start
	// (vLLM/SGLang ZMQ frame 2, gRPC sequence_number).
	Seq uint64
	// Timestamp is the engine's wall clock at publication, seconds since the Unix epoch; 0
	// when absent.
	Timestamp float64
	// DPRank is the data-parallel rank that published the batch, meaningful when HasDPRank.
	DPRank    int
	HasDPRank bool
	Events    []Event
}

// ResetReason says why a subscriber asks its consumer to forget a worker's entries.
type ResetReason string

// The reset reasons.
const (
	// ResetGap: batches were lost and could not be replayed (no replay endpoint, or the
	// replay buffer no longer holds them).
	ResetGap ResetReason = "gap"
	// ResetRestart: the sequence went backwards, so the engine restarted with an empty cache.
	ResetRestart ResetReason = "restart"
	// ResetOutOfRange: the gRPC server could not resume from the requested sequence.
	ResetOutOfRange ResetReason = "out_of_range"
	// ResetDataLoss: the gRPC server reports the subscriber fell behind.
	ResetDataLoss ResetReason = "data_loss"
	// ResetResume: the stream resumed without a usable cursor, so events may have been missed.
	ResetResume ResetReason = "resume"
)
