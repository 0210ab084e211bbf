package app_test

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/fx"

	"github.com/smg-go/smg/app"
)

// readinessReason GETs /readiness and returns its status and reason (status 0 when the
// request failed).
func readinessReason(c *http.Client, base string) (int, string) {
	resp, err := c.Get(base + "/readiness")
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	var body struct {
		Reason string `json:"reason"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		return resp.StatusCode, err.Error()
	}
	return resp.StatusCode, body.Reason
}

// Stop first drains: /readiness answers 503 "draining" at once, and new requests are still
// served (with Connection: close) for the drain delay; only then does the listener close.
// With nothing in flight the drain is clean: Stop returns nil.
func TestStopServesNewRequestsDuringTheDrainDelay(t *testing.T) {
	t.Parallel()
	cfg := testConfig()
	cfg.ShutdownDrainDelay = 400 * time.Millisecond
	cfg.ShutdownGracePeriod = time.Second
	var srv *app.Server
	fa := fx.New(app.Options(cfg, fx.Populate(&srv),
		route("GET /ping", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "pong") })))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, fa.Start(ctx))
	c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{}}
	defer c.CloseIdleConnections()
	base := srv.URL()
	status, reason := readinessReason(c, base)
	require.Equal(t, http.StatusServiceUnavailable, status, "no workers: not ready")
	require.Equal(t, "insufficient healthy workers", reason)

	start := time.Now()
	stopped := make(chan error, 1)
	go func() { stopped <- fa.Stop(ctx) }()
	require.Eventually(t, func() bool {
		status, reason := readinessReason(c, base)
		return status == http.StatusServiceUnavailable && reason == "draining"
	}, 200*time.Millisecond, 5*time.Millisecond, "/readiness answers draining at once")

	resp, err := c.Get(base + "/ping")
	require.NoError(t, err, "a new request during the drain delay is served")
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	assert.Equal(t, "pong", string(b))
	assert.True(t, resp.Close, "responses during the drain ask the client to reconnect (Connection: close)")
	require.Less(t, time.Since(start), cfg.ShutdownDrainDelay, "the request above was inside the drain delay")

	require.NoError(t, <-stopped, "nothing in flight: a clean drain")
	assert.GreaterOrEqual(t, time.Since(start), cfg.ShutdownDrainDelay, "Stop waited for the drain delay")
	_, err = net.Dial("tcp", srv.Addr().String())
	assert.Error(t, err, "the listener is closed after the drain")
}
