// Package kvevents subscribes to engines' KV-cache event streams and hands decoded
// batches (domain/kvevent) to a ports.KVEventSink, one subscription per worker (per DP
// rank):
//
//   - ZMQ (zmq.go) for HTTP vLLM/SGLang workers whose labels name an endpoint
//     (ResolveZMQ: kv_events_endpoint, kv_events_replay_endpoint, kv_events_topic; the
//     Kubernetes annotations smg.ai/kv-events-endpoint and smg.ai/kv-events-replay-endpoint
//     map onto them). SUB + msgpack decoding of both vLLM payload generations and SGLang's
//     (decode.go, event.go), replay of gaps through a DEALER.
//   - gRPC SubscribeKvEvents (grpc.go) for grpc:// workers, with SMG kv_event_monitor's
//     resume and reset rules.
//
// Wire facts: ../shared/reference/kv-routing.md §1 (vLLM), §2 (SGLang), §3 (gRPC, SMG's
// consumer), §7 (go-zeromq/zmq4 v0.17.0 and vmihailenco/msgpack/v5 v5.4.1, tested
// against libzmq 4.3.4). The decoder was written from those facts, not from the
// simulator's publisher.
//
// Each subscriber exposes Health (connected, last sequence, gaps, replays, resets,
// decode errors, lag, idle time) for metrics and smg doctor. app/kvroute starts one gRPC
// subscriber per grpc:// worker with a kvindex.WorkerSink as its sink, stops it and calls
// Index.RemoveWorker when the worker goes, and lets cache_aware use the index for workers
// whose Health is live. The ZMQ subscriber is not wired yet (HTTP workers need the
// prompt's token ids before selection).
package kvevents
