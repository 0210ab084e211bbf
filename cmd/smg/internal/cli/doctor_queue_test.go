package cli_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The doctor shows the flow-control queue's depth: the total on its summary line and a
// warning per decode worker with requests queued (warnings keep exit 0).
func TestDoctorShowsQueueDepth(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"workers":[
{"id":"p1","url":"http://127.0.0.1:1","worker_type":"prefill","connection_mode":"http","runtime_type":"vllm","kv_connector":"NixlConnector","status":"ready","queued":0},
{"id":"d1","url":"http://127.0.0.1:2","worker_type":"decode","connection_mode":"http","runtime_type":"vllm","kv_connector":"NixlConnector","status":"ready","queued":7},
{"id":"d2","url":"http://127.0.0.1:3","worker_type":"decode","connection_mode":"http","runtime_type":"vllm","kv_connector":"NixlConnector","status":"ready","queued":0}
],"total":3,"stats":{"prefill_count":1,"decode_count":2,"regular_count":0}}`))
	}))
	t.Cleanup(srv.Close)

	code, out, errOut := runCLI([]string{"doctor", "--url", srv.URL, "--json", "--no-health-probe"}, nil)
	assert.Equal(t, 0, code, errOut)
	var rep struct {
		doctorOut
		Queued int64 `json:"queued"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &rep), out)
	assert.Equal(t, int64(7), rep.Queued)
	require.Len(t, rep.Findings, 1, out)
	f := rep.Findings[0]
	assert.Equal(t, "decode_queue_backlog", f.Kind)
	assert.Equal(t, "warning", f.Severity)
	assert.Equal(t, "d1", f.WorkerID)
	assert.Contains(t, f.Message, "7 requests queued")

	code, out, _ = runCLI([]string{"doctor", "--url", srv.URL, "--no-health-probe"}, nil)
	assert.Equal(t, 0, code)
	assert.Contains(t, out, "7 requests queued for decode slots")
	assert.Contains(t, out, "[decode_queue_backlog]")
}
