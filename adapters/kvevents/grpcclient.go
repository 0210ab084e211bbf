package kvevents

import (
	"fmt"

	"google.golang.org/grpc"

	sglangpb "github.com/smg-go/smg/adapters/engine/grpcengine/pb/sglang"
	tokenspeedpb "github.com/smg-go/smg/adapters/engine/grpcengine/pb/tokenspeed"
	vllmpb "github.com/smg-go/smg/adapters/engine/grpcengine/pb/vllm"
	"github.com/smg-go/smg/domain/worker"
)

// ClientFor is the KvEventsClient of a gRPC worker's engine service on cc (a
// grpcengine.Pool channel): SglangScheduler, VllmEngine or TokenSpeedScheduler by the
// worker's runtime. Errors: a runtime whose service has no SubscribeKvEvents, or one not
// detected yet.
func ClientFor(w worker.Worker, cc grpc.ClientConnInterface) (KvEventsClient, error) {
	switch w.Runtime {
	case worker.RuntimeSGLang:
		return sglangpb.NewSglangSchedulerClient(cc), nil
	case worker.RuntimeVLLM:
		return vllmpb.NewVllmEngineClient(cc), nil
	case worker.RuntimeTokenSpeed:
		return tokenspeedpb.NewTokenSpeedSchedulerClient(cc), nil
	}
	return nil, fmt.Errorf("kvevents: runtime %q has no SubscribeKvEvents service", w.Runtime)
}
