package grpcfleet_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/app/config"
	"github.com/smg-go/smg/test/sim/grpcsim"
)

// A failed gRPC prefill: the access line names both workers and the router error series is
// labelled grpc; the leg's error line carries the access line's request_id (and the engine
// rid apart), so one grep finds both.
func TestGRPCLegFailureIsLoggedUnderTheRequestID(t *testing.T) {
	t.Parallel()
	g, logs, p, d := obsPD(t, func(role string, c *grpcsim.Config) {
		if role == grpcsim.RolePrefill {
			c.Faults = []string{"status:503"}
		}
	}, func(c *config.Config) { c.DisableRetries = true })
	pid, did := workerIDs(t, g, p, d)
	const reqID = "obs-grpc-fail-1"
	r := g.Post(t, "/v1/completions", map[string]any{"model": pdModel, "prompt": "fail", "max_tokens": 4},
		http.Header{"X-Request-Id": {reqID}})
	require.Equal(t, http.StatusServiceUnavailable, r.Status, string(r.Body))
	assert.Equal(t, "prefill_worker_failed_to_start", errCode(t, r))

	line := logs.accessLine(t, reqID)
	assert.Equal(t, pid, line["prefill_worker"])
	assert.Equal(t, did, line["decode_worker"])
	assert.Equal(t, float64(503), line["status"])
	assert.Equal(t, "server_error", line["outcome"])
	assert.Equal(t, 0.0, line["ttft_ms"])

	var leg map[string]any
	for _, l := range logs.records(t, "gRPC PD leg failed") {
		if l["request_id"] == reqID {
			leg = l
		}
	}
	require.NotNil(t, leg, "the leg failure is logged under the client's request id")
	assert.Equal(t, "prefill", leg["leg"])
	eng, _ := leg["engine_request_id"].(string)
	assert.True(t, strings.HasPrefix(eng, reqID+"-") && len(eng) > len(reqID)+1,
		"the engine rid is {request id}-{uuidv7} (SMG's middleware-id rule), kept apart: %q", eng)

	m := g.Metrics(t)
	assert.Equal(t, 1.0, m.Sum("smg_router_request_errors_total", "router_type", "grpc", "connection_mode", "grpc",
		"endpoint", "completions", "error_type", "backend_error"))
}

// A client that leaves a gRPC stream midway is logged as the dispatcher's gone client
// (499, client_closed_request), not as a 200 ok; the legs are retired.
func TestGRPCStreamClientDisconnectIsLoggedAsClientClosed(t *testing.T) {
	t.Parallel()
	g, logs, p, d := obsPD(t, func(_ string, c *grpcsim.Config) { c.ITL = 50 * time.Millisecond }, nil)
	pid, did := workerIDs(t, g, p, d)
	const reqID = "obs-grpc-gone-1"
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	req := g.NewRequest(t, ctx, "/v1/chat/completions", map[string]any{"model": pdModel, "stream": true, "max_tokens": 200,
		"ignore_eos": true, "messages": []map[string]any{{"role": "user", "content": "a long answer"}}}, http.Header{"X-Request-Id": {reqID}})
	resp, err := g.Client.Do(req)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	buf := make([]byte, 256)
	n, err := resp.Body.Read(buf)
	require.NoError(t, err)
	require.Contains(t, string(buf[:n]), "data:")
	cancel()
	_ = resp.Body.Close()

	line := logs.accessLine(t, reqID)
	assert.Equal(t, float64(499), line["status"])
	assert.Equal(t, "client_closed_request", line["outcome"])
	assert.Equal(t, "client_closed_request", line["error_code"])
	assert.Equal(t, pid, line["prefill_worker"])
	assert.Equal(t, did, line["decode_worker"])
	assert.Greater(t, line["ttft_ms"], 0.0)
	require.Eventually(t, func() bool { return d.Stats().Aborted == 1 }, faultBound, 10*time.Millisecond,
		"the decode is aborted: %+v", d.Stats())
}
