package cli_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A pair probe is bounded by --probe-timeout, not --timeout: a gateway that takes longer
// than --timeout to give its verdict on a pair (a hung leg runs into its stall bound) still
// has that verdict reported (here pair_probe_failed with the gateway's 504), and a probe
// past --probe-timeout is reported as one that could not be run.
func TestDoctorPairProbeHasItsOwnTimeout(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/workers/probe-pair":
			select {
			case <-time.After(300 * time.Millisecond): // the gateway's stall bound, scaled down
			case <-r.Context().Done():
				return
			}
			_, _ = w.Write([]byte(`{"outcome":"failed","status":504,"error_code":"decode_timeout","error":"decode stalled"}`))
		case "/workers":
			_, _ = w.Write([]byte(`{"workers":[
{"id":"p0","url":"grpc://127.0.0.1:1","model_id":"m","worker_type":"prefill","connection_mode":"grpc","runtime_type":"sglang","status":"ready"},
{"id":"d0","url":"grpc://127.0.0.1:3","model_id":"m","worker_type":"decode","connection_mode":"grpc","runtime_type":"sglang","status":"ready"}]}`))
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	message := func(args ...string) string {
		t.Helper()
		code, out, errOut := runCLI(append([]string{"doctor", "--url", srv.URL, "--json", "--probe-requests", "--no-health-probe", "--timeout", "100ms"}, args...), nil)
		assert.Equal(t, 1, code, errOut+out)
		var rep struct {
			Findings []struct{ Kind, Message string } `json:"findings"`
		}
		require.NoError(t, json.Unmarshal([]byte(out), &rep), out)
		for _, f := range rep.Findings {
			if f.Kind == "pair_probe_failed" {
				return f.Message
			}
		}
		t.Fatalf("no pair_probe_failed finding: %s", out)
		return ""
	}
	assert.Contains(t, message(), "504 decode_timeout", "the default --probe-timeout outlasts the gateway's verdict")
	assert.Contains(t, message("--probe-timeout", "150ms"), "could not be run")
	code, _, errOut := runCLI([]string{"doctor", "--url", srv.URL, "--probe-requests", "--probe-timeout", "0s"}, nil)
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, "--probe-timeout")
}
