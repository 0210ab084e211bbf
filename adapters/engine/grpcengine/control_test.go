package grpcengine_test

import (
	"context"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/smg-go/smg/adapters/engine/grpcengine"
	sglangpb "github.com/smg-go/smg/adapters/engine/grpcengine/pb/sglang"
	"github.com/smg-go/smg/domain/worker"
	"github.com/smg-go/smg/test/sim/grpcsim"
)

func itoa(n int) string { return strconv.Itoa(n) }

func statusOf(err error) int {
	s, _ := grpcengine.ErrorStatus(err)
	return s
}

func TestHTTPStatusTable(t *testing.T) {
	t.Parallel()
	for c, want := range map[codes.Code]int{
		codes.OK: 200, codes.InvalidArgument: 400, codes.FailedPrecondition: 400, codes.OutOfRange: 400,
		codes.Canceled: 400, codes.Unauthenticated: 401, codes.PermissionDenied: 403, codes.NotFound: 404,
		codes.AlreadyExists: 409, codes.Aborted: 409, codes.ResourceExhausted: 429, codes.Unavailable: 503,
		codes.DeadlineExceeded: 504, codes.Unimplemented: 501, codes.Internal: 500, codes.Unknown: 500,
		codes.DataLoss: 500,
	} {
		assert.Equal(t, want, grpcengine.HTTPStatus(c), c.String())
	}
	st, msg := grpcengine.ErrorStatus(status.Error(codes.ResourceExhausted, "full"))
	assert.Equal(t, 429, st)
	assert.Equal(t, "full", msg)
	for _, m := range []string{
		"grpc: received message larger than max (306787890 vs. 4194304)",
		"grpc: trying to send message larger than max (306787890 vs. 4194304)",
	} {
		err := status.Error(codes.ResourceExhausted, m)
		assert.True(t, grpcengine.IsMessageTooLarge(err), m)
		st, msg = grpcengine.ErrorStatus(err)
		assert.Equal(t, 413, st, m)
		assert.Contains(t, msg, "306787890 vs. 4194304")
		assert.Contains(t, msg, "gRPC message limit")
	}
	assert.False(t, grpcengine.IsMessageTooLarge(status.Error(codes.ResourceExhausted, "full")))
	assert.False(t, grpcengine.IsMessageTooLarge(status.Error(codes.Internal, "received message larger than max (2 vs. 1)")))
	st, _ = grpcengine.ErrorStatus(context.DeadlineExceeded)
	assert.Equal(t, 504, st)
	st, _ = grpcengine.ErrorStatus(nil)
	assert.Equal(t, 200, st)
}

func TestTarget(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		url, target string
		secure      bool
	}{
		{"grpc://10.0.0.1:50051", "10.0.0.1:50051", false},
		{"grpcs://engine.local:443", "engine.local:443", true},
		{"grpc://h:7@2", "h:7", false},
		{"grpc://[fd00::1]:50051", "[fd00::1]:50051", false},
		{"grpc://h", "h:80", false},
		{"grpcs://h", "h:443", true},
	} {
		got, secure, err := grpcengine.Target(c.url)
		require.NoError(t, err, c.url)
		assert.Equal(t, c.target, got, c.url)
		assert.Equal(t, c.secure, secure, c.url)
	}
	_, _, err := grpcengine.Target("http://h:1")
	assert.Error(t, err)
}

func TestHealthCheckAndEngineID(t *testing.T) {
	t.Parallel()
	p := newPool(t)
	s := startSim(t, grpcsim.Config{Engine: grpcsim.EngineVLLM, Role: grpcsim.RoleDecode, EngineID: "e-1"})
	w := worker.Worker{URL: s.URL(), Runtime: worker.RuntimeVLLM}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	require.NoError(t, p.HealthCheck(ctx, w))
	id, err := p.EngineID(ctx, w)
	require.NoError(t, err)
	assert.Equal(t, "e-1", id)

	sg := startSim(t, grpcsim.Config{Engine: grpcsim.EngineSGLang, Role: grpcsim.RoleDecode})
	require.NoError(t, p.HealthCheck(ctx, worker.Worker{URL: sg.URL(), Runtime: worker.RuntimeSGLang}))
	id, err = p.EngineID(ctx, worker.Worker{URL: sg.URL(), Runtime: worker.RuntimeSGLang})
	require.NoError(t, err)
	assert.Empty(t, id, "SGLang has no KV engine id")
	assert.Error(t, p.HealthCheck(ctx, worker.Worker{URL: sg.URL(), Runtime: worker.RuntimeVLLM}), "wrong service")
	sg.SetHealthy(false)
	err = p.HealthCheck(ctx, worker.Worker{URL: sg.URL(), Runtime: worker.RuntimeSGLang})
	assert.ErrorContains(t, err, "engine reports unhealthy: scheduler is not responding")
	sg.SetHealthy(true)
	assert.NoError(t, p.HealthCheck(ctx, worker.Worker{URL: sg.URL(), Runtime: worker.RuntimeSGLang}))

	// One channel per worker: the same URL gives the same channel.
	c1, err := p.Conn(w)
	require.NoError(t, err)
	c2, err := p.Conn(worker.Worker{URL: s.URL() + "@1"})
	require.NoError(t, err)
	assert.Same(t, c1, c2)
	p.Forget(s.URL())
	c3, err := p.Conn(w)
	require.NoError(t, err)
	assert.NotSame(t, c1, c3)
}

// hangingAbort is an SglangScheduler whose Abort never answers.
type hangingAbort struct {
	sglangpb.UnimplementedSglangSchedulerServer
	got chan string
}

func (h *hangingAbort) Abort(ctx context.Context, r *sglangpb.AbortRequest) (*sglangpb.AbortResponse, error) {
	h.got <- r.GetRequestId()
	<-ctx.Done()
	return nil, ctx.Err()
}

func TestAbortIsBoundedAndDetachedFromCancellation(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	h := &hangingAbort{got: make(chan string, 4)}
	srv := grpc.NewServer()
	sglangpb.RegisterSglangSchedulerServer(srv, h)
	go func() { _ = srv.Serve(ln) }()
	defer srv.Stop()

	p := grpcengine.New(grpcengine.Options{AbortTimeout: 300 * time.Millisecond})
	defer p.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // the client already went away: the abort must still be sent
	start := time.Now()
	err = p.Abort(ctx, worker.Worker{URL: "grpc://" + ln.Addr().String(), Runtime: worker.RuntimeSGLang}, "client gone", "req-1")
	elapsed := time.Since(start)
	assert.Equal(t, 504, statusOf(err))
	assert.Equal(t, "req-1", <-h.got)
	assert.Less(t, elapsed, 5*time.Second, "bounded by AbortTimeout")
	assert.Equal(t, 10*time.Second, grpcengine.AbortDeadline)
}

func TestAbortStopsARunningSimRequest(t *testing.T) {
	t.Parallel()
	p := newPool(t)
	for _, engine := range []string{grpcsim.EngineSGLang, grpcsim.EngineVLLM, grpcsim.EngineTokenSpeed} {
		s := startSim(t, grpcsim.Config{Engine: engine, Role: grpcsim.RoleDecode})
		w := worker.Worker{URL: s.URL(), Runtime: worker.Runtime(engine)}
		require.NoError(t, p.Abort(context.Background(), w, "test", "nope-1"), engine)
		assert.Equal(t, int64(1), s.Stats().AbortRPCs, engine)
	}
}
