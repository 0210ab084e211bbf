// Package sim is smg's engine simulator: a protocol-faithful stand-in for one SGLang or vLLM
// prefill or decode instance (issue #2). It serves the engine's HTTP surface on loopback and,
// crucially, *checks* the KV handoff instead of accepting anything:
//
//   - SGLang: a prefill registers each bootstrap_room on its own bootstrap listener; a decode
//     contacts bootstrap_host:bootstrap_port over real HTTP to claim the room and receive the
//     KV (engines.md §2.3–§2.6). The prefill answers only after the transfer.
//   - vLLM NIXL: a prefill returns real-vLLM-shaped kv_transfer_params; a decode carrying them
//     pulls the blocks from remote_host:remote_port (engines.md §3.1).
//   - vLLM Mooncake: a prefill pushes the KV to its bootstrap listener under transfer_id; a
//     decode fetches it from remote_bootstrap_addr, checking remote_engine_id (engines.md §3.3,
//     seed "Connector Modes").
//   - vLLM MoRI-IO: a prefill returns its handoff only at its one-token cap; a READ decode
//     pulls from the handoff's handshake port, a WRITE prefill pushes to the decode's notify
//     port, and a WRITE decode aborted before write_done keeps its blocks (leaked_blocks;
//     seed "MoRI-IO (HTTP)"). See moriio.go.
//
// The text a decode generates is a deterministic function of what arrived through the
// handoff; [HandoffText] and [RecomputeText] let tests tell a real handoff from a local
// recompute. Counters are exposed by GET /sim/stats and [Server.Stats].
//
// Errors found before the first response byte are answered with their status and the
// engine's error body (a decode handoff failure is a 500, even for stream:true); once a head
// is out (streaming, or the delay-body fault) they travel as an SSE error event + [DONE].
//
// Counter timing: SGLang and NIXL count handoffs_sent / handoffs_received before the leg
// answers; a Mooncake prefill answers at once and counts handoffs_sent when the decode's
// fetch completes, a MoRI-IO WRITE prefill when the decode acknowledged its push (poll
// Stats, or wait for PendingHandoffs 0, in tests).
//
// Every prompt goes through a paged KV cache with prefix matching, LRU eviction and blocks
// held while a request runs (package kvcache; usage cached_tokens is the instance's
// block-aligned hit, or the whole prompt on a decode that received the KV), and time
// follows the work: prefill time for the uncached tokens shared by concurrent prefills, a
// per-block transfer time on the decode, a queue behind MaxRunning slots (package
// compute). See kv.go and README.md.
//
// Use [Start] in tests, or the cmd/smg-sim binary for demos and fleets.
package sim
