package pipeline

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/smg-go/smg/app/config"
	"github.com/smg-go/smg/domain/worker"
	"github.com/smg-go/smg/ports"
)

// A leg that fails because the engine does not serve the model has its worker's facts
// re-read in the background, once at a time; other failures re-read nothing.
func TestModelNotFoundRefreshesTheWorkersFacts(t *testing.T) {
	t.Parallel()
	var calls atomic.Int32
	release := make(chan struct{})
	pl := New(Deps{Config: config.Default(), Facts: func(ctx context.Context, w *worker.Live) {
		calls.Add(1)
		<-release
	}})
	w := worker.NewLive(worker.Worker{ID: "d", URL: "grpc://d", Role: worker.RoleDecode, Mode: worker.ConnGRPC}, worker.StatusReady)
	leg := ports.GRPCLeg{Worker: w, RequestID: "r"}

	pl.legFault(context.Background(), "decode", leg, status.Error(codes.Internal, "engine exploded"), false)
	pl.legFault(context.Background(), "decode", leg, status.Error(codes.NotFound, "The model `m2` does not exist."), false)
	pl.legFault(context.Background(), "decode", leg, status.Error(codes.NotFound, "The model `m2` does not exist."), false)
	require.Eventually(t, func() bool { return calls.Load() == 1 }, 5*time.Second, time.Millisecond)
	close(release)
	require.NoError(t, pl.Close(context.Background()))
	assert.Equal(t, int32(1), calls.Load(), "one refresh while one is in flight; none for a 500")
}
