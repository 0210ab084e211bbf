package sim

import "sync/atomic"

// Stats are the counters of one instance, as served by GET /sim/stats (same JSON names).
// All are counts since start or the last reset, except Running and Waiting (gauges).
type Stats struct {
	// Requests counts inference HTTP requests received (a batch counts once), faulted or not.
	Requests int64 `json:"requests"`
	// HandoffsSent counts KV handoffs a prefill completed: a SGLang room whose KV the decode
	// received, a NIXL block set a decode pulled, a Mooncake transfer a decode fetched. One
	// per batch item.
	HandoffsSent int64 `json:"handoffs_sent"`
	// HandoffsReceived counts KV a decode received through a handoff, one per batch item.
	HandoffsReceived int64 `json:"handoffs_received"`
	// RecomputedPrompts counts vLLM decode requests that computed the prompt locally because
	// kv_transfer_params were absent or incomplete (vLLM's "Got invalid KVTransferParams").
	RecomputedPrompts int64 `json:"recomputed_prompts"`
	// DecodeOnlyRequests counts inference requests a decode instance received with no
	// handoff data at all (selective PD's decode-only shape): a vLLM decode without
	// kv_transfer_params (it computes the whole prompt itself, and counts in
	// RecomputedPrompts too), a SGLang decode without bootstrap_host/bootstrap_room (it
	// rejects the request with 400, as the engine does). Canaries are not counted.
	DecodeOnlyRequests int64 `json:"decode_only_requests"`
	// PrefillOnlyRequests counts inference requests a prefill instance received with no
	// handoff data at all (selective PD's prefill-only shape, served whole there): a vLLM
	// prefill without kv_transfer_params, a SGLang prefill without bootstrap_host and
	// bootstrap_room. A vLLM prefill leg of a connector-less (passthrough) pair carries
	// none either and counts too. Canaries are not counted.
	PrefillOnlyRequests int64 `json:"prefill_only_requests"`
	// UnmatchedRooms counts handoffs this instance's leg waited on for HandoffTimeout without
	// its peer: a SGLang prefill room never claimed, a SGLang decode room never registered,
	// a Mooncake transfer never fetched (prefill) or never pushed (decode), NIXL blocks never
	// pulled (prefill lease expiry).
	UnmatchedRooms int64 `json:"unmatched_rooms"`
	// DuplicateRooms counts a room (or Mooncake transfer_id) used twice at once: a second
	// prefill registration or a second decode claim while the first is pending. Counted by
	// the instance that detects it (the prefill, whose bootstrap server holds the rooms).
	DuplicateRooms int64 `json:"duplicate_rooms"`
	// Aborted counts inference requests whose client went away before the response completed.
	Aborted int64 `json:"aborted"`
	// Running is the number of inference requests inside the engine now (from arrival to the
	// end of the response, including handoff waits and queueing).
	Running int64 `json:"running"`
	// MaxRunningSeen is the highest Running observed.
	MaxRunningSeen int64 `json:"max_running_seen"`
	// Errors counts inference requests answered with an error status or an in-stream error
	// event (injected status faults included).
	Errors int64 `json:"errors"`
	// Waiting is the number of requests queued for a compute slot (Config.MaxRunning).
	Waiting int64 `json:"waiting"`
	// PromptTokens totals the prompt tokens of the requests admitted to the KV cache (each
	// distinct prompt once; cached or not, computed or received through a handoff), as the
	// engines' prompt_tokens_total counts them. GenerationTokens totals output tokens.
	PromptTokens     int64 `json:"prompt_tokens"`
	GenerationTokens int64 `json:"generation_tokens"`
	// CachedTokens totals the prompt tokens found in this instance's own prefix cache
	// (block-aligned). On a prefill, and on any instance that computed the prompt, this is
	// the sum of the usage cached_tokens it reported; a PD decode reports the KV it received
	// as cached too, but counts only its local hits here. Hit rate = CachedTokens /
	// PromptTokens.
	CachedTokens int64 `json:"cached_tokens"`
	// EvictedBlocks counts cached KV blocks evicted (LRU) to make room.
	EvictedBlocks int64 `json:"evicted_blocks"`
	// KVCacheBlocksUsed is the number of KV blocks holding data now: those held by running
	// requests plus cached blocks nobody holds (a gauge).
	KVCacheBlocksUsed int64 `json:"kv_cache_blocks_used"`
	// QueueMS is the total time requests waited for admission (a compute slot, or KV
	// blocks while the cache was full of held blocks), in milliseconds.
	QueueMS int64 `json:"queue_ms"`
	// BusyMS is the total time at least one request held a compute slot, in milliseconds.
	BusyMS int64 `json:"busy_ms"`
	// LeakedBlocks counts the KV blocks a MoRI-IO WRITE decode allocated for a request that
	// was aborted (or gave up) before the prefill's write_done arrived: vLLM's
	// MoRIIOConnector keeps them allocated (seed "WRITE dispatch").
	LeakedBlocks int64 `json:"leaked_blocks"`
	// CanaryRequests counts inference requests that are the gateway's canaries (request id,
	// X-Request-Id or SGLang rid, starting with wire.CanaryRequestIDPrefix); they are
	// counted in Requests too.
	CanaryRequests int64 `json:"canary_requests"`
	// DPRankRequests counts SGLang legs per routed_dp_rank (key: the rank in decimal), when
	// Config.DPSize > 1.
	DPRankRequests map[string]int64 `json:"dp_rank_requests,omitempty"`
}

type counters struct {
	requests, handoffsSent, handoffsReceived, recomputed, unmatched, duplicate atomic.Int64
	aborted, running, maxRunning, errors, genTokens                            atomic.Int64
	leakedBlocks, canary, decodeOnly, prefillOnly                              atomic.Int64
	dpRanks                                                                    [maxDPSize]atomic.Int64
}

func (c *counters) snapshot() Stats {
	return Stats{
		Requests:           c.requests.Load(),
		HandoffsSent:       c.handoffsSent.Load(),
		HandoffsReceived:   c.handoffsReceived.Load(),
		RecomputedPrompts:  c.recomputed.Load(),
		DecodeOnlyRequests: c.decodeOnly.Load(), PrefillOnlyRequests: c.prefillOnly.Load(),
		UnmatchedRooms:   c.unmatched.Load(),
		DuplicateRooms:   c.duplicate.Load(),
		Aborted:          c.aborted.Load(),
		Running:          c.running.Load(),
		MaxRunningSeen:   c.maxRunning.Load(),
		Errors:           c.errors.Load(),
		GenerationTokens: c.genTokens.Load(),
		LeakedBlocks:     c.leakedBlocks.Load(),
		CanaryRequests:   c.canary.Load(),
		DPRankRequests:   c.dpSnapshot(),
	}
}

// reset zeroes the counters; the gauges Running and Waiting keep their live values and
// MaxRunningSeen restarts from the current Running.
func (c *counters) reset() {
	for _, a := range []*atomic.Int64{&c.requests, &c.handoffsSent, &c.handoffsReceived,
		&c.recomputed, &c.unmatched, &c.duplicate, &c.aborted, &c.errors, &c.genTokens, &c.leakedBlocks, &c.canary, &c.decodeOnly, &c.prefillOnly} {
		a.Store(0)
	}
	for i := range c.dpRanks {
		c.dpRanks[i].Store(0)
	}
	c.maxRunning.Store(c.running.Load())
}

func (c *counters) enter() {
	n := c.running.Add(1)
	for {
		m := c.maxRunning.Load()
		if n <= m || c.maxRunning.CompareAndSwap(m, n) {
			return
		}
	}
}

func (c *counters) leave() { c.running.Add(-1) }

// decodeOnlyShape reports a request that carries no handoff data for engine's decode: no
// kv_transfer_params (vLLM), no bootstrap_host and bootstrap_room (SGLang).
func decodeOnlyShape(engine string, raw *rawReq) bool {
	if engine == EngineSGLang {
		return isNull(raw.BootstrapRoom) && isNull(raw.BootstrapHost)
	}
	return isNull(raw.KVTransferParams)
}
