package ports

import (
	"context"

	"github.com/smg-go/smg/domain/worker"
)

// GRPCWorkerInfo is what a gRPC worker reports about itself at registration: the runtime
// whose service answered, the labels derived from its server and model info (grpc.md
// §1.2), the model ids it serves, and the vLLM KV connector facts (grpc.md §1.9).
type GRPCWorkerInfo struct {
	// Runtime is sglang, vllm or tokenspeed.
	Runtime worker.Runtime
	// Labels are the server-info facts: paths, parallel sizes, windows, pairing facts.
	Labels map[string]string
	// Models are the served model ids (served_model_name, else model_path); may be empty.
	Models []string
	// KVConnector, KVRole and KVEngineID are the vLLM servicer's kv_connector, kv_role and
	// kv_engine_id (GetServerInfoResponse fields 6-8); "" when not reported.
	KVConnector, KVRole, KVEngineID string
}

// GRPCEngines reaches workers over gRPC for the control plane: registration, health
// probes and engine-id refresh. Implementations keep one lazily connected channel per
// worker URL and are safe for concurrent use. Errors carry a gRPC status where the engine
// answered one.
type GRPCEngines interface {
	// Detect reads w's server and model info. With w.Runtime unspecified it asks every
	// engine service and takes the one that answers; otherwise only w.Runtime's.
	Detect(ctx context.Context, w worker.Worker) (GRPCWorkerInfo, error)
	// HealthCheck calls w.Runtime's HealthCheck RPC; nil iff it answered healthy.
	HealthCheck(ctx context.Context, w worker.Worker) error
	// EngineID re-reads w's KV engine id (vLLM GetServerInfo kv_engine_id); "" when the
	// engine reports none or the runtime has no engine id.
	EngineID(ctx context.Context, w worker.Worker) (string, error)
	// Forget closes and drops the channel to the worker at url (after it is removed).
	Forget(url string)
}
