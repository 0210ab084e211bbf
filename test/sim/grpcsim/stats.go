package grpcsim

import "sync/atomic"

// Stats are an instance's counters as GET /sim/stats serves them; the JSON names are the
// HTTP simulator's (test/sim Stats) plus abort_rpcs and last_abort_unix_ms.
type Stats struct {
	// Requests counts Generate (and Encode) RPCs received, faulted or not.
	Requests int64 `json:"requests"`
	// HandoffsSent counts KV a prefill handed over: a room or Mooncake transfer the decode
	// took, NIXL blocks the decode pulled.
	HandoffsSent int64 `json:"handoffs_sent"`
	// HandoffsReceived counts KV a decode received through a handoff.
	HandoffsReceived int64 `json:"handoffs_received"`
	// RecomputedPrompts counts decode requests that computed the prompt themselves because
	// no usable handoff came with them.
	RecomputedPrompts int64 `json:"recomputed_prompts"`
	// DecodeOnlyRequests counts Generate RPCs a decode instance received with no handoff
	// data at all (selective PD's decode-only shape), the HTTP simulator's counter of that
	// name: a vLLM decode without kv_transfer_params (JSON or legacy), a SGLang or
	// TokenSpeed decode without a bootstrap room. Such a request is served whole by the
	// decode (and counts in RecomputedPrompts too). Canaries are not counted.
	DecodeOnlyRequests int64 `json:"decode_only_requests"`
	// PrefillOnlyRequests counts Generate RPCs a prefill instance received with no handoff
	// data (selective PD's prefill-only shape, served whole there), the HTTP simulator's
	// counter of that name: a vLLM prefill without kv_transfer_params, a SGLang or
	// TokenSpeed prefill without a bootstrap room. A vLLM prefill leg of a passthrough pair
	// carries none either and counts too. Canaries are not counted.
	PrefillOnlyRequests int64 `json:"prefill_only_requests"`
	// UnmatchedRooms counts handoffs whose peer never came within HandoffTimeout (or whose
	// room the prefill never registered: a wrong room).
	UnmatchedRooms int64 `json:"unmatched_rooms"`
	// DuplicateRooms counts a room, block set or transfer id used twice at once.
	DuplicateRooms int64 `json:"duplicate_rooms"`
	// Aborted counts Generate RPCs ended by cancellation or an Abort RPC.
	Aborted int64 `json:"aborted"`
	// Running is the number of Generate RPCs in progress; MaxRunningSeen its high mark.
	Running        int64 `json:"running"`
	MaxRunningSeen int64 `json:"max_running_seen"`
	// Errors counts RPCs that ended with a non-OK status (faults included), except those the
	// client cancelled or let expire (counted in Aborted).
	Errors int64 `json:"errors"`
	// Waiting is the number of Generate RPCs queued for a compute slot (Config.MaxRunning).
	Waiting int64 `json:"waiting"`
	// PromptTokens totals the prompt tokens of the RPCs admitted to the KV cache (cached or
	// not, computed or received); GenerationTokens output ids.
	PromptTokens     int64 `json:"prompt_tokens"`
	GenerationTokens int64 `json:"generation_tokens"`
	// CachedTokens, EvictedBlocks, KVCacheBlocksUsed, QueueMS and BusyMS are the HTTP
	// simulator's (test/sim Stats): local prefix-cache hits in tokens, LRU evictions,
	// blocks holding KV now, time RPCs waited for admission and time at least one RPC held
	// a compute slot (ms).
	CachedTokens      int64 `json:"cached_tokens"`
	EvictedBlocks     int64 `json:"evicted_blocks"`
	KVCacheBlocksUsed int64 `json:"kv_cache_blocks_used"`
	QueueMS           int64 `json:"queue_ms"`
	BusyMS            int64 `json:"busy_ms"`
	// AbortRPCs counts Abort RPCs received (every request id counts once).
	AbortRPCs int64 `json:"abort_rpcs"`
	// TokenizerRequests counts GetTokenizer RPCs received (answered or refused).
	TokenizerRequests int64 `json:"tokenizer_requests"`
	// LastAbortUnixMs is when the last abort (RPC or cancellation) arrived, Unix ms; 0 = none.
	LastAbortUnixMs int64 `json:"last_abort_unix_ms"`
	// CanaryRequests counts Generate RPCs that are the gateway's canaries (request id
	// starting with wire.CanaryRequestIDPrefix); they are counted in Requests too.
	CanaryRequests int64 `json:"canary_requests"`
	// DPRankRequests counts, with DPSize > 1, the legs per DP rank they landed on (key: the
	// rank in decimal): the data_parallel_rank pin on SGLang and vLLM, the room's residue
	// on TokenSpeed.
	DPRankRequests map[string]int64 `json:"dp_rank_requests,omitempty"`
	// MM is what the instance received of multimodal input.
	MM MMStats `json:"mm"`
	// EPD is what the instance saw of EPD (encode.go).
	EPD EPDStats `json:"epd"`
}

type counters struct {
	requests, sent, received, recomputed, unmatched, duplicate, aborted atomic.Int64
	running, maxRunning, errors, genTokens, abortRPCs                   atomic.Int64
	lastAbort, canary, tokenizer, decodeOnly, prefillOnly               atomic.Int64
	dpRanks                                                             [maxDPSize]atomic.Int64
	mm                                                                  mmCounters
}

func (c *counters) snapshot() Stats {
	return Stats{
		Requests: c.requests.Load(), HandoffsSent: c.sent.Load(), HandoffsReceived: c.received.Load(),
		RecomputedPrompts: c.recomputed.Load(), UnmatchedRooms: c.unmatched.Load(),
		DuplicateRooms: c.duplicate.Load(), Aborted: c.aborted.Load(), Running: c.running.Load(),
		MaxRunningSeen: c.maxRunning.Load(), Errors: c.errors.Load(),
		GenerationTokens: c.genTokens.Load(), AbortRPCs: c.abortRPCs.Load(), LastAbortUnixMs: c.lastAbort.Load(),
		DPRankRequests: c.dpSnapshot(), CanaryRequests: c.canary.Load(), TokenizerRequests: c.tokenizer.Load(),
		DecodeOnlyRequests: c.decodeOnly.Load(), PrefillOnlyRequests: c.prefillOnly.Load(), MM: c.mm.snapshot(),
	}
}

func (c *counters) reset() {
	for _, a := range []*atomic.Int64{&c.requests, &c.sent, &c.received, &c.recomputed, &c.unmatched,
		&c.duplicate, &c.aborted, &c.errors, &c.genTokens, &c.abortRPCs, &c.lastAbort, &c.canary, &c.tokenizer, &c.decodeOnly, &c.prefillOnly} {
		a.Store(0)
	}
	for i := range c.dpRanks {
		c.dpRanks[i].Store(0)
	}
	c.maxRunning.Store(c.running.Load())
	c.mm.reset()
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

// decodeOnlyShape reports a request that carries no handoff data for engine's decode or prefill: no
// kv_transfer_params (vLLM), no bootstrap room (SGLang, TokenSpeed).
func decodeOnlyShape(engine string, req genRequest) bool {
	if engine == EngineVLLM {
		return req.kvParams == nil
	}
	return !req.hasRoom
}
