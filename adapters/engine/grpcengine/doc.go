// Package grpcengine is the gRPC engine client: one lazily connected gRPC channel per
// worker (grpc:// plaintext, grpcs:// TLS) with the seed's transport profile, runtime
// detection and server-info labels for registration, HealthCheck probes, engine-id reads,
// Abort RPCs bounded by 10 s, and the one mapping from gRPC status codes to HTTP statuses
// (smg-spec.md §9.1.6, grpc.md §1.2, §3.3). The generated protobuf packages live in pb/.
package grpcengine
