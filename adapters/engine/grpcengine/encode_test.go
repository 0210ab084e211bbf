package grpcengine_test

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/smg-go/smg/adapters/engine/grpcengine"
	tokenspeedencoderpb "github.com/smg-go/smg/adapters/engine/grpcengine/pb/tokenspeedencoder"
	"github.com/smg-go/smg/domain/worker"
	"github.com/smg-go/smg/ports"
)

// encoderOnly serves only TokenSpeedEncoder (and, with hs, grpc.health.v1) and records the
// last EncodeRequest.
type encoderOnly struct {
	tokenspeedencoderpb.UnimplementedTokenSpeedEncoderServer
	got chan *tokenspeedencoderpb.EncodeRequest
}

func (e *encoderOnly) Encode(_ context.Context, r *tokenspeedencoderpb.EncodeRequest) (*tokenspeedencoderpb.EncodeResponse, error) {
	e.got <- r
	return &tokenspeedencoderpb.EncodeResponse{Accepted: true}, nil
}

func serveEncoder(t *testing.T, hs *health.Server) (string, *encoderOnly) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := grpc.NewServer()
	e := &encoderOnly{got: make(chan *tokenspeedencoderpb.EncodeRequest, 1)}
	tokenspeedencoderpb.RegisterTokenSpeedEncoderServer(srv, e)
	if hs != nil {
		healthpb.RegisterHealthServer(srv, hs)
	}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(srv.Stop)
	return "grpc://" + ln.Addr().String(), e
}

func TestEncodeRequestAndEncoderOnlyWorkers(t *testing.T) {
	t.Parallel()
	hs := health.NewServer()
	url, enc := serveEncoder(t, hs)
	pool := grpcengine.New(grpcengine.Options{})
	t.Cleanup(func() { _ = pool.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	w := worker.Worker{URL: url, Role: worker.RoleEncode, Mode: worker.ConnGRPC}

	info, err := pool.Detect(ctx, w)
	require.NoError(t, err, "an encoder without the scheduler service is still an encode worker")
	assert.Equal(t, worker.RuntimeTokenSpeed, info.Runtime)
	w.Runtime = info.Runtime
	require.NoError(t, pool.HealthCheck(ctx, w))
	hs.SetServingStatus("", healthpb.HealthCheckResponse_NOT_SERVING)
	assert.Error(t, pool.HealthCheck(ctx, w), "grpc.health.v1 NOT_SERVING")

	grid := [3]int64{1, 4, 6}
	mm := &ports.GRPCMultimodal{PlaceholderTokenID: 151655, Items: []ports.GRPCMediaItem{{Modality: "image",
		Hash: "00ff", Pixels: []byte{1, 2, 3, 4}, PixelShape: [2]uint32{1, 1}, Grid: &grid, Offset: 3, Length: 6}}}
	ok, err := pool.Encode(ctx, w, "encode-1", mm, 1<<62)
	require.NoError(t, err)
	assert.True(t, ok)
	r := <-enc.got
	assert.Equal(t, "encode-1", r.GetRequestId())
	require.Len(t, r.GetItems(), 1)
	assert.EqualValues(t, int64(1)<<62, r.GetItems()[0].GetBootstrapRoom())
	require.Len(t, r.GetMmInputs().GetItems(), 1)
	it := r.GetMmInputs().GetItems()[0]
	assert.Equal(t, []byte{0x00, 0xff}, it.GetContentHash())
	assert.Equal(t, []byte{1, 2, 3, 4}, it.GetEncoderInput().GetInline())
	assert.EqualValues(t, 151655, it.GetPlaceholderTokenId())
	require.Len(t, it.GetPlaceholders(), 1)
	assert.EqualValues(t, 3, it.GetPlaceholders()[0].GetOffset())
	assert.EqualValues(t, 6, it.GetPlaceholders()[0].GetLength())
	assert.Equal(t, []uint32{1, 3}, it.GetModelSpecificTensors()["image_grid_thw"].GetShape())

	// A prefill worker that serves nothing is not rescued by the encode fallback.
	_, err = pool.Detect(ctx, worker.Worker{URL: url, Role: worker.RolePrefill, Mode: worker.ConnGRPC})
	assert.ErrorIs(t, err, grpcengine.ErrNoEngineService)
}

func TestEncoderOnlyWithoutHealthServiceIsAlive(t *testing.T) {
	t.Parallel()
	url, _ := serveEncoder(t, nil)
	pool := grpcengine.New(grpcengine.Options{})
	t.Cleanup(func() { _ = pool.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	w := worker.Worker{URL: url, Role: worker.RoleEncode, Mode: worker.ConnGRPC, Runtime: worker.RuntimeTokenSpeed}
	assert.NoError(t, pool.HealthCheck(ctx, w), "UNIMPLEMENTED health: the server answered")
}
