// Package text is the gateway's text pipeline for gRPC engines, which take and return token ids:
// a HuggingFace tokenizer.json byte-level BPE tokenizer (Qwen2/2.5/3, Llama-3.x families), chat
// template rendering with HF's Jinja2 conventions, an incremental detokenizer that never emits a
// partial UTF-8 character, and the stop-sequence hold-back. It is pure: no network, no gRPC, no
// net/http; where a tokenizer comes from (flags, worker labels, a worker's GetTokenizer bundle)
// is resolved here too, and the byte fetching is a port implemented by the engine adapter.
//
// Wire and behaviour facts come from shared/reference/grpc.md §1.14 (SMG's crates/tokenizer:
// factory.rs, chat_template.rs, stream.rs, stop.rs; crates/grpc_client/src/tokenizer_bundle.rs).
package text
