package registry

import (
	"context"
	"time"

	"github.com/smg-go/smg/domain/errs"
	"github.com/smg-go/smg/domain/wire"
	"github.com/smg-go/smg/domain/worker"
	"github.com/smg-go/smg/ports"
)

// WithGRPC installs the gRPC engine client that activates grpc:// and grpcs:// workers
// (runtime detection through GetServerInfo/GetModelInfo, HealthCheck probes). Without one
// such workers are stored pending with runtime sglang, as before. Call it before the first
// Register (Module does, when a ports.GRPCEngines is provided).
func (s *Service) WithGRPC(e ports.GRPCEngines) *Service {
	s.grpc = e
	return s
}

// warnNoPD logs, for a gRPC prefill or decode whose runtime has no PD protocol (seed
// "Supported Engines": TensorRT-LLM and MLX cannot serve as PD legs; grpc.md §1.3), that
// PD requests selecting it answer 400 runtime_pd_not_supported. The worker is registered,
// as SMG registers it: the refusal belongs to the request that would need PD with it.
func (s *Service) warnNoPD(w worker.Worker) {
	if w.Mode != worker.ConnGRPC || (w.Role != worker.RolePrefill && w.Role != worker.RoleDecode) {
		return
	}
	switch w.Runtime {
	case worker.RuntimeTRTLLM, worker.RuntimeMLX:
		s.log.Warn("gRPC worker's runtime has no PD protocol: PD requests that select it answer 400 "+wire.CodeRuntimePDNotSupported,
			"worker", w.DisplayURL(), "worker_type", string(w.Role), "runtime_type", string(w.Runtime))
	}
}

// refuseEPD rejects, in EPD mode, a worker that is not gRPC (seed "EPD": EPD requires gRPC
// workers running TokenSpeed), so an HTTP pair can never serve an EPD gateway's requests.
func refuseEPD(epd bool, w worker.Worker) error {
	if !epd || w.Mode == worker.ConnGRPC {
		return nil
	}
	return errs.New(400, wire.CodeWorkerBadRequest,
		"this gateway runs --epd-disaggregation, which needs gRPC workers running TokenSpeed: %s is not a grpc:// or grpcs:// worker", w.DisplayURL())
}

// activateGRPC is activate for a gRPC worker: until the worker answers, it detects the
// runtime and server-info labels (each attempt bounded by the probe timeout) and, unless
// health checks are off, calls the runtime's HealthCheck; then it stores the detected
// worker as ready. With health checks off a single detection is tried; when it fails the
// worker is made ready as sglang with the registered facts only.
func (s *Service) activateGRPC(ctx context.Context, l *worker.Live, healthOff bool, timeout time.Duration) {
	maxPause := min(max(s.cfg.HealthCheckInterval, 10*time.Millisecond), 5*time.Second)
	pause := min(50*time.Millisecond, maxPause)
	warned := false
	var info ports.GRPCWorkerInfo
	for {
		if !s.current(l) {
			return
		}
		actx, cancel := context.WithTimeout(ctx, timeout)
		got, err := s.grpc.Detect(actx, l.Worker)
		if err == nil && !healthOff {
			probe := l.Worker
			if probe.Runtime == worker.RuntimeUnspecified {
				probe.Runtime = got.Runtime
			}
			err = s.grpc.HealthCheck(actx, probe)
		}
		cancel()
		if err == nil {
			info = got
			break
		}
		if ctx.Err() != nil {
			return
		}
		if !l.Runtime.HasGRPCService() {
			s.log.Warn("the gateway does not speak this runtime's gRPC service: the worker is registered with the given facts only and is not health-probed",
				"worker", l.URL, "worker_id", l.ID, "runtime_type", string(l.Runtime))
			break
		}
		if healthOff {
			s.log.Warn("gRPC worker detection failed; registering it with the given facts only",
				"worker", l.URL, "worker_id", l.ID, "error", err.Error())
			break
		}
		if !warned {
			s.log.Warn("gRPC worker not answering yet; it stays pending and will be probed again",
				"worker", l.URL, "worker_id", l.ID, "error", err.Error())
			warned = true
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(pause):
		}
		pause = min(pause*2, maxPause)
	}
	detected := applyGRPCInfo(l.Worker, info)
	s.detected.put(l.ID, info)
	s.swapIn(l, detected, info.KVEngineID != "" && detected.KVEngineID == info.KVEngineID)
}

// applyGRPCInfo merges what a gRPC worker reported into its registration: registered
// values win (runtime, models, labels, kv_connector/kv_role/kv_engine_id); an undetected
// runtime becomes sglang (smg-spec.md §3.2 step 6).
func applyGRPCInfo(w worker.Worker, info ports.GRPCWorkerInfo) worker.Worker {
	if w.Runtime == worker.RuntimeUnspecified {
		w.Runtime = info.Runtime
		if w.Runtime == "" {
			w.Runtime = worker.RuntimeSGLang
		}
	}
	if len(w.Models) == 0 {
		w.Models = append([]string(nil), info.Models...)
	}
	if len(info.Labels) > 0 {
		merged := make(map[string]string, len(info.Labels)+len(w.Labels))
		for k, v := range info.Labels {
			merged[k] = v
		}
		for k, v := range w.Labels {
			merged[k] = v
		}
		w.Labels = merged
	}
	if w.KVConnector == "" {
		w.KVConnector = info.KVConnector
	}
	if w.KVRole == "" {
		w.KVRole = info.KVRole
	}
	if w.KVEngineID == "" {
		w.KVEngineID = info.KVEngineID
	}
	return w
}

// forget drops the gRPC channel of a removed worker.
func (s *Service) forget(l *worker.Live) {
	if s.grpc != nil && l.Mode == worker.ConnGRPC {
		s.detected.drop(l.ID)
		s.grpc.Forget(l.URL)
	}
}
