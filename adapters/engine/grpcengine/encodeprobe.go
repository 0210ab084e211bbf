package grpcengine

import (
	"context"
	"errors"
	"fmt"

	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/smg-go/smg/domain/worker"
	"github.com/smg-go/smg/ports"
)

// An EPD encode worker is a TokenSpeed encoder service. One that also serves the
// TokenSpeedScheduler service is detected and probed through it like any TokenSpeed worker;
// one that serves only TokenSpeedEncoder (UNIMPLEMENTED there) is taken as TokenSpeed with
// the registered facts, and probed with the standard grpc.health.v1 Check (service ""), an
// UNIMPLEMENTED answer counting as alive: the server answered on its channel.

// encodeOnly reports an encode worker that answered but serves no scheduler service.
func encodeOnly(w worker.Worker, err error) bool {
	return w.Role == worker.RoleEncode && (status.Code(err) == codes.Unimplemented || errors.Is(err, ErrNoEngineService))
}

// detectEncoder is Detect's answer for an encoder-only worker.
func detectEncoder() ports.GRPCWorkerInfo {
	return ports.GRPCWorkerInfo{Runtime: worker.RuntimeTokenSpeed, Labels: map[string]string{}}
}

// healthEncoder is the grpc.health.v1 probe of an encoder-only worker.
func (p *Pool) healthEncoder(ctx context.Context, w worker.Worker) error {
	cc, err := p.Conn(w)
	if err != nil {
		return err
	}
	r, err := healthpb.NewHealthClient(cc).Check(ctx, &healthpb.HealthCheckRequest{})
	switch {
	case status.Code(err) == codes.Unimplemented:
		return nil
	case err != nil:
		return fmt.Errorf("health check %s: %w", w.URL, err)
	case r.GetStatus() != healthpb.HealthCheckResponse_SERVING:
		return fmt.Errorf("health check %s: encode worker reports %s", w.URL, r.GetStatus())
	}
	return nil
}
