// Package kvcache is the simulator's KV-cache model: paged blocks of BlockSize tokens,
// prefix matching by chained block hashes over a prompt's token ids, LRU eviction of
// unreferenced blocks, blocks held while a request runs, and the KV events a real engine
// publishes when its cache changes (vLLM vllm/distributed/kv_events.py, SGLang
// python/sglang/srt/disaggregation/kv_events.py; see ../shared/reference/kv-routing.md).
package kvcache

// Event is one change of an instance's KV cache, in the shape both engines publish:
// exactly one of Stored, Removed or Cleared is set.
type Event struct {
	// Stored is set when blocks were added (vLLM/SGLang BlockStored).
	Stored *BlockStored
	// Removed is set when blocks were evicted (BlockRemoved).
	Removed *BlockRemoved
	// Cleared is true when the whole cache was dropped (AllBlocksCleared).
	Cleared bool
}

// BlockStored reports consecutive full blocks of one prompt, in prompt order.
type BlockStored struct {
	// BlockHashes are the engine hashes of the new blocks, one per block (the chained
	// hash: each depends on its parent's hash and its own token ids).
	BlockHashes []uint64
	// ParentBlockHash is the engine hash of the block before BlockHashes[0]; HasParent is
	// false when the first block starts the prompt.
	ParentBlockHash uint64
	HasParent       bool
	// TokenIDs are the token ids of all the new blocks, concatenated
	// (len = len(BlockHashes) × BlockSize).
	TokenIDs []uint32
	// BlockSize is the number of tokens per block.
	BlockSize int
	// LoraID is the LoRA adapter id, 0 for the base model.
	LoraID int64
}

// BlockRemoved reports evicted blocks by engine hash.
type BlockRemoved struct {
	BlockHashes []uint64
}

// Sink receives a cache's events in the order the cache changed. Publish is called with
// the cache's lock released, once per batch of events caused by one operation (one
// request's admission or completion, one eviction pass); it must not block for long
// (publishers queue and drop on overflow, as the engines' bounded queues do). A nil Sink
// drops events.
type Sink interface {
	Publish(events []Event)
}
