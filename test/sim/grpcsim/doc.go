// Package grpcsim is smg's gRPC engine simulator: one SGLang (SglangScheduler), vLLM
// (VllmEngine) or TokenSpeed (TokenSpeedScheduler, plus TokenSpeedEncoder for encode
// workers) instance on loopback, speaking the engines' real services from
// adapters/engine/grpcengine/pb and checking the PD handoff for real (grpc.md §3.5):
//
//   - SGLang and TokenSpeed: a prefill registers the request's bootstrap room on its side
//     channel (its bootstrap port) and answers once a decode took the KV; a decode claims the
//     room at bootstrap_host:bootstrap_port. TokenSpeed rooms are int64 and, with DPSize > 1,
//     must satisfy room % dp_size == rank.
//   - vLLM NIXL: a prefill with do_remote_decode returns engine-shaped
//     kv_transfer_params_json; a decode carrying them pulls the blocks from
//     remote_host:remote_port.
//   - vLLM Mooncake: a prefill keeps the KV under transfer_id; a decode fetches it from
//     remote_bootstrap_addr, which checks remote_engine_id.
//
// Output ids are a deterministic function of the prompt and of where its KV came from
// ([HandoffTokens], [RecomputeTokens]). Streams send one delta chunk per token with
// cumulative counts, then a complete; stream=false sends one complete. Errors are gRPC
// statuses. Abort (both shapes) and RPC cancellation end a request; counters are served on
// GET /sim/stats (the HTTP simulator's names) and reset by POST /sim/reset on the stats
// port; POST /sim/health?ok=false makes HealthCheck answer unhealthy ([Server.SetHealthy]).
// Faults: Config.Faults per instance, or gRPC metadata x-sim-fault per request.
//
// Prompts go through the same KV-cache and compute models as the HTTP simulator's
// (packages test/sim/kvcache and test/sim/compute; work.go), with PageSize as the block
// size; a prefill computes before it registers its KV.
//
// Use [Start] in tests, or `smg-sim --transport grpc`.
package grpcsim
