package grpcengine

import (
	"context"
	"fmt"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	sglangpb "github.com/smg-go/smg/adapters/engine/grpcengine/pb/sglang"
	tokenspeedpb "github.com/smg-go/smg/adapters/engine/grpcengine/pb/tokenspeed"
	vllmpb "github.com/smg-go/smg/adapters/engine/grpcengine/pb/vllm"
	"github.com/smg-go/smg/domain/worker"
)

// HealthCheck implements ports.GRPCEngines: w.Runtime's HealthCheck RPC, bounded by ctx.
// It returns nil iff the engine answered healthy=true; an unhealthy answer gives an error
// with the engine's message; RPC failures are returned as they are (gRPC status). After an
// UNAVAILABLE failure the channel's reconnect backoff is reset, so the next probe (not a
// backoff timer) decides when a restarted engine is reached again. An encode worker without
// the scheduler service is probed with grpc.health.v1 (encodeprobe.go).
func (p *Pool) HealthCheck(ctx context.Context, w worker.Worker) error {
	err := p.healthCheck(ctx, w)
	if err != nil && encodeOnly(w, err) {
		err = p.healthEncoder(ctx, w)
	}
	if status.Code(err) == codes.Unavailable { // status.Code sees through the wrapping
		if cc, cerr := p.Conn(w); cerr == nil {
			cc.ResetConnectBackoff()
		}
	}
	return err
}

func (p *Pool) healthCheck(ctx context.Context, w worker.Worker) error {
	var healthy bool
	var msg string
	switch w.Runtime {
	case worker.RuntimeSGLang:
		c, err := p.SGLang(w)
		if err != nil {
			return err
		}
		r, err := c.HealthCheck(ctx, &sglangpb.HealthCheckRequest{})
		if err != nil {
			return fmt.Errorf("health check %s: %w", w.URL, err)
		}
		healthy, msg = r.GetHealthy(), r.GetMessage()
	case worker.RuntimeVLLM:
		c, err := p.VLLM(w)
		if err != nil {
			return err
		}
		r, err := c.HealthCheck(ctx, &vllmpb.HealthCheckRequest{})
		if err != nil {
			return fmt.Errorf("health check %s: %w", w.URL, err)
		}
		healthy, msg = r.GetHealthy(), r.GetMessage()
	case worker.RuntimeTokenSpeed:
		c, err := p.TokenSpeed(w)
		if err != nil {
			return err
		}
		r, err := c.HealthCheck(ctx, &tokenspeedpb.HealthCheckRequest{})
		if err != nil {
			return fmt.Errorf("health check %s: %w", w.URL, err)
		}
		healthy, msg = r.GetHealthy(), r.GetMessage()
	default:
		return fmt.Errorf("health check %s: runtime %q has no gRPC health check", w.URL, w.Runtime)
	}
	if !healthy {
		return fmt.Errorf("health check %s: engine reports unhealthy: %s", w.URL, msg)
	}
	return nil
}

// EngineID implements ports.GRPCEngines: vLLM's GetServerInfo kv_engine_id, bounded by
// ctx. Other runtimes report no KV engine id and give "", nil without an RPC.
func (p *Pool) EngineID(ctx context.Context, w worker.Worker) (string, error) {
	if w.Runtime != worker.RuntimeVLLM {
		return "", nil
	}
	c, err := p.VLLM(w)
	if err != nil {
		return "", err
	}
	r, err := c.GetServerInfo(ctx, &vllmpb.GetServerInfoRequest{})
	if err != nil {
		return "", err
	}
	return r.GetKvEngineId(), nil
}

// Abort asks w's engine to abort requestIDs, bounded by the abort deadline (10 s,
// Options.AbortTimeout) even when ctx has none; a cancelled ctx still lets the abort go
// out (it is detached from ctx's cancellation, keeping its values). SGLang and TokenSpeed
// take one id per RPC (TokenSpeed also aborts the "-n<i>" children); vLLM takes all ids in
// one. An engine's success=false ("not found") is not an error; the first RPC error is.
func (p *Pool) Abort(ctx context.Context, w worker.Worker, reason string, requestIDs ...string) error {
	if len(requestIDs) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), p.opts.AbortTimeout)
	defer cancel()
	switch w.Runtime {
	case worker.RuntimeVLLM:
		c, err := p.VLLM(w)
		if err != nil {
			return err
		}
		_, err = c.Abort(ctx, &vllmpb.AbortRequest{RequestIds: requestIDs})
		return err
	case worker.RuntimeSGLang:
		c, err := p.SGLang(w)
		if err != nil {
			return err
		}
		var first error
		for _, id := range requestIDs {
			if _, err := c.Abort(ctx, &sglangpb.AbortRequest{RequestId: id, Reason: reason}); err != nil && first == nil {
				first = err
			}
		}
		return first
	case worker.RuntimeTokenSpeed:
		c, err := p.TokenSpeed(w)
		if err != nil {
			return err
		}
		var first error
		for _, id := range requestIDs {
			if _, err := c.Abort(ctx, &tokenspeedpb.AbortRequest{RequestId: id, Reason: reason}); err != nil && first == nil {
				first = err
			}
		}
		return first
	}
	return fmt.Errorf("abort on %s: runtime %q has no gRPC abort", w.URL, w.Runtime)
}
