package dispatch

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/domain/errs"
	"github.com/smg-go/smg/domain/worker"
)

func TestContextErrorNamesTheCause(t *testing.T) {
	t.Parallel()
	shutdown, cut := context.WithCancelCause(context.Background())
	cut(ErrShutdown)
	child, cancelChild := context.WithCancel(shutdown) // a leg context under the request's
	defer cancelChild()
	timedOut, cancelTimeout := context.WithTimeout(context.Background(), time.Nanosecond)
	defer cancelTimeout()
	<-timedOut.Done()
	gone, cancelGone := context.WithCancel(context.Background())
	cancelGone()
	wrapped, cutWrapped := context.WithCancelCause(context.Background())
	cutWrapped(fmt.Errorf("stopping: %w", ErrShutdown))

	for _, tc := range []struct {
		name   string
		ctx    context.Context
		status int
		code   string
	}{
		{"the shutdown grace deadline answers 503", shutdown, http.StatusServiceUnavailable, "server_shutting_down"},
		{"a leg context inherits the shutdown cause", child, http.StatusServiceUnavailable, "server_shutting_down"},
		{"a wrapped shutdown cause counts", wrapped, http.StatusServiceUnavailable, "server_shutting_down"},
		{"the request timeout stays 504", timedOut, http.StatusGatewayTimeout, "request_timeout"},
		{"a gone client stays 499", gone, 499, "client_closed_request"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := contextError(tc.ctx, "while streaming the decode output")
			assert.Equal(t, tc.status, e.Status)
			assert.Equal(t, tc.code, e.Code)
			assert.False(t, e.Retryable)
		})
	}
}

// blockingAdmitter holds every dispatch until its context ends, like a full decode window.
type blockingAdmitter struct{}

func (blockingAdmitter) Admit(ctx context.Context, _ *worker.Live, _ int) (func(), error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

func TestADispatchWaitingForADecodeSlotIsCutWith503(t *testing.T) {
	t.Parallel()
	d := New(Deps{Admission: blockingAdmitter{}})
	ctx, cut := context.WithCancelCause(context.Background())
	time.AfterFunc(10*time.Millisecond, func() { cut(ErrShutdown) })
	_, err := d.admitDecode(ctx, &worker.Live{}, 1)
	e, ok := errs.As(err)
	require.True(t, ok, "a gateway error, not the bare context error: %v", err)
	assert.Equal(t, http.StatusServiceUnavailable, e.Status)
	assert.Equal(t, "server_shutting_down", e.Code)

	tctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	_, err = d.admitDecode(tctx, &worker.Live{}, 1)
	e, ok = errs.As(err)
	require.True(t, ok, "%v", err)
	assert.Equal(t, "request_timeout", e.Code, "the request timeout while queued answers 504")
}

func TestShutdownErrorIsTheSeedShape(t *testing.T) {
	t.Parallel()
	rec := httptest.NewRecorder()
	WriteError(rec, shutdownError("reading the decode response"))
	require.Equal(t, http.StatusServiceUnavailable, rec.Code)
	assert.Equal(t, "server_shutting_down", rec.Header().Get("X-SMG-Error-Code"))
	assert.JSONEq(t, `{"error":{"type":"server_error","code":"server_shutting_down",
		"message":"the gateway is shutting down (grace period over) reading the decode response","param":null}}`, rec.Body.String())
}
