// Package pdmode is the per-request disaggregation decision (selective PD): a request whose
// prompt is mostly cached on a worker that can prefill locally, or that would wait behind a
// busy prefill pool, is served by that one worker alone (decode-only) instead of paying a
// prefill leg, a KV transfer and a second queue. Everything else stays disaggregated.
//
// The decision is pure: the dispatcher gathers the inputs (prompt tokens, each capable
// worker's cached prefix from the routing prefix index, in-flight loads) and acts on the
// result. Anchors: llm-d's prefix-based-pd-decider (nonCachedTokens), Dynamo's conditional
// disaggregation (effective input length, prefill_load, decode-busy guard), vllm-router's
// pd_uncached_token_threshold (kv-routing.md §6).
package pdmode
