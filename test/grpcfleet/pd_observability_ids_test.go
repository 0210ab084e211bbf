package grpcfleet_test

import (
	"net/http"
	"testing"

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
	assert.NotEmpty(t, eng, "the engine's rid is kept apart")
	assert.NotEqual(t, reqID, eng)

	m := g.Metrics(t)
	assert.Equal(t, 1.0, m.Sum("smg_router_request_errors_total", "router_type", "grpc", "connection_mode", "grpc",
		"endpoint", "completions", "error_type", "backend_error"))
}
