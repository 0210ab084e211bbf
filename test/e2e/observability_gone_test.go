package e2e_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A client that leaves an HTTP PD stream midway is logged as the dispatcher's gone client:
// status 499, error_code and outcome client_closed_request, the pair named.
func TestHTTPStreamClientDisconnectIsLoggedAsClientClosed(t *testing.T) {
	t.Parallel()
	o := startObsGateway(t, func(w http.ResponseWriter, r *http.Request, _ []byte) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write([]byte("data: {\"id\":\"x\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hi\"}}]}\n\n"))
		w.(http.Flusher).Flush()
		select { // the rest never comes: the gateway cancels the leg when the client leaves
		case <-r.Context().Done():
		case <-time.After(10 * time.Second):
		}
	})
	const reqID = "obs-http-gone-1"
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	req := o.g.NewRequest(t, ctx, "/v1/chat/completions", map[string]any{"model": model, "stream": true,
		"messages": []map[string]any{{"role": "user", "content": "hi"}}}, http.Header{"X-Request-Id": {reqID}})
	resp, err := o.g.Client.Do(req)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	buf := make([]byte, 256)
	n, err := resp.Body.Read(buf)
	require.NoError(t, err)
	require.Contains(t, string(buf[:n]), "data:")
	cancel()
	_ = resp.Body.Close()

	var line map[string]any
	require.Eventually(t, func() bool {
		for _, l := range o.logs.records(t, "request") {
			if l["request_id"] == reqID {
				line = l
				return true
			}
		}
		return false
	}, 5*time.Second, 10*time.Millisecond)
	assert.Equal(t, float64(499), line["status"])
	assert.Equal(t, "client_closed_request", line["outcome"])
	assert.Equal(t, "client_closed_request", line["error_code"])
	assert.Equal(t, o.workerID(t, o.prefill.URL), line["prefill_worker"])
	assert.Equal(t, o.workerID(t, o.decode.URL), line["decode_worker"])
}
