// Package handoff is the pure core of the PD KV handoff: what each leg's JSON body carries
// and how the decode output is stitched back together. It does no I/O; the dispatch use case
// in app/ sends the bodies it builds and feeds it the bytes the engines return.
//
// SGLang (parallel dispatch, seed "Parallel Dispatch"; smg-spec.md §2.5; engines.md §2):
//   - Inspect reads a client body once: route, stream, logprobs, batch size, n, model.
//   - BootstrapPatch adds bootstrap_host/port/room (scalars, or equal-length lists for a
//     batch) and the --dp-aware rank fields, returning both legs' bodies and the rooms.
//   - SplitSamples/MergeSamples/FanIn turn an n>1 request into n single-sample dispatches and
//     merge their answers (issue #4 item 6).
//   - PrefillLogprobs/MergeLogprobs/MergeLogprobsEvent prepend the prefill's
//     input_token_logprobs to the decode's (smg-spec.md §2.8.2, §2.8.3, §2.9).
//
// vLLM (sequential dispatch, seed "Sequential Dispatch (vLLM)", "Connector Modes";
// smg-spec.md §2.10; engines.md §3):
//   - ConnectorFor picks nixl, mooncake or passthrough from the prefill worker's
//     kv_connector; PlanSequential builds the one-token prefill leg and, from the prefill's
//     response, the decode leg with its kv_transfer_params and an explicit Outcome.
//   - MoRI-IO (seed "MoRI-IO (HTTP)") has no recompute fallback and its own path:
//     CheckMoRIIORequest and CheckMoRIIOPair refuse what the pair cannot serve before any
//     leg is contacted; PlanMoRIIO builds the tagged prefill leg (and, under concurrent WRITE,
//     the decode leg minted up front); ValidateMoRIIOHandoff vets the prefill's handoff.
//
// Streams (smg-spec.md §2.8.1, §11.2 T-HTTP-1): DoneScanner finds the line-anchored
// "data: [DONE]" event in a byte stream; EventSplitter frames SSE events; ErrorEvent builds the
// terminal error event.
//
// Everything here is safe for concurrent use unless a type says otherwise; bodies returned
// are fresh slices or (documented) the caller's own source bytes, never shared mutable state.
package handoff
