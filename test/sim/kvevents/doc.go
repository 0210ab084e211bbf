// Package kvevents publishes the simulator's KV-cache events as the real engines do, so a
// gateway's subscriber can be tested against a faithful wire:
//
//   - the engines' flag --kv-events-config (vLLM vllm/config/kv_events.py KVEventsConfig,
//     SGLang python/sglang/srt/disaggregation/kv_events.py KVEventsConfig): [ParseConfig];
//   - a ZMQ PUB socket sending three frames per batch (topic, 8-byte big-endian sequence
//     number from 0, msgpack KVEventBatch) and an optional ZMQ ROUTER replay socket that
//     answers [identity, "", start_seq] with every buffered batch whose sequence number is
//     >= start_seq, then an end marker (sequence -1, empty payload): [Publisher];
//   - the payload shapes of vLLM (current tagged maps, or the legacy tagged arrays) and of
//     SGLang (signed 64-bit hashes, page-sized blocks, attn_dp_rank): [Encoding];
//   - one publisher per data-parallel rank, on port + rank: [Set];
//   - the batches in order, with event ids, for the gRPC SubscribeKvEvents stream of the
//     engines' protos (SMG grpc_servicer/smg_grpc_servicer/kv_events.py): [Publisher.Subscribe];
//   - runtime faults that a subscriber must survive (a sequence gap, a stall, an
//     undecodable payload): [Publisher.SetFault].
//
// Wire facts: ../shared/reference/kv-routing.md §1 (vLLM), §2 (SGLang), §3 (SMG gRPC).
// The transport is github.com/go-zeromq/zmq4 (pure Go ZMTP 3) and the encoding
// github.com/vmihailenco/msgpack/v5; both were checked against libzmq and msgspec (§7).
package kvevents
