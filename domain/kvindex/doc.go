// Package kvindex is the gateway's view of which worker holds which prompt prefix in
// its KV cache, built from the engines' own KV events (domain/kvevent) rather than from
// the gateway's guesses. Pure Go, safe for concurrent use.
//
// # Keys
//
// A block is keyed by the gateway's own chained hash of its token ids: XXH3-64 seeded
// with the parent block's key, over its token ids as 4-byte little-endian values and
// its extra-key fingerprint (the same recipe on the event and the query side). It never
// uses the engine's block hash, whose seed and algorithm vary by engine and deployment
// (vLLM SHA-256 with a per-process NONE_HASH unless PYTHONHASHSEED is set, SGLang SHA-256
// of the first 8 bytes; reference kv-routing.md §1.6, §2.3). SMG does the same with XXH3
// seed 1337 plus a rolling prefix hash (§3.4). Engine hashes are kept only per worker, to
// find the block a BlockRemoved names. Blocks live in namespaces (model, LoRA adapter, block
// size): a LoRA's KV never matches the base model's, and a worker with another block size
// is matched with its own chunking. Blocks whose extra keys carry multimodal items, a
// cache_salt or prompt embeddings chain to different keys, so a plain token query never
// matches them.
//
// # Memory
//
// Options.MaxBlocks bounds the number of (worker, block) entries. Past it, whole blocks
// are evicted least recently used first, "use" being a store or a match; a matched chain
// is touched leaf first so its root stays youngest, and a stored block's parent is
// touched after it. A block whose ancestor was evicted can no longer be reached from the
// root and ages out. An entry of a block no other worker holds costs about 210 bytes
// (BenchmarkMemoryPerEntry); a block several workers hold costs less per entry.
//
// # How it feeds cache_aware
//
// app/kvroute runs it for gRPC workers: a sink per subscription (adapters/kvevents)
// calls ApplyBatch with the worker's URL and model, Reset on a subscriber reset, and
// RemoveWorker when the registry drops the worker. cache_aware, for a request whose token ids are known, calls Match and
// takes Hit.Tokens() of each candidate as its matched prefix for workers whose stream is
// live (kvevents Health), falling back to the approximate tree for the others; the score
// combines the matched share with load in the cost model domain/policy documents
// (CacheAware.selectKV).
package kvindex
