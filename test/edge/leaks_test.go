package edge_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/test/fleet"
)

const secret = "s3cretpw"

// call sends method path with body (JSON) to a gateway process and reads the answer.
func call(t *testing.T, addr, method, path, body string) (int, string) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, "http://"+addr+path, rd)
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b)
}

// withUserinfo puts user:secret@ into a loopback URL.
func withUserinfo(u string) string {
	return strings.Replace(u, "http://", "http://user:"+secret+"@", 1)
}

func TestWorkerCredentialsAreUsedButNeverShown(t *testing.T) {
	t.Parallel()
	p := fleet.NewRecorder(t, "sglang", "rec-model", nil)
	d := fleet.NewRecorder(t, "sglang", "rec-model", nil)
	g := launch(t, nil, "--pd-disaggregation", "--log-level", "debug", "--health-check-interval-secs", "1")
	for _, w := range []struct{ url, role string }{{p.URL, "prefill"}, {d.URL, "decode"}} {
		status, body := call(t, g.addr, http.MethodPost, "/workers",
			`{"url":"`+withUserinfo(w.url)+`","worker_type":"`+w.role+`"}`)
		require.Equal(t, http.StatusAccepted, status, body)
		assert.NotContains(t, body, secret)
	}
	require.Eventually(t, func() bool {
		status, _ := call(t, g.addr, http.MethodGet, "/readiness", "")
		return status == http.StatusOK
	}, 15*time.Second, 50*time.Millisecond, "workers never ready: %s", g.stderr)

	status, body := call(t, g.addr, http.MethodPost, "/v1/chat/completions",
		`{"model":"rec-model","messages":[{"role":"user","content":"hi"}],"max_tokens":2}`)
	require.Equal(t, http.StatusOK, status, body)
	require.NotEmpty(t, d.Requests(), "the registered (unredacted) URL is dialed")

	status, list := call(t, g.addr, http.MethodGet, "/workers", "")
	require.Equal(t, http.StatusOK, status)
	var l struct {
		Workers []struct {
			ID  string `json:"id"`
			URL string `json:"url"`
		} `json:"workers"`
	}
	require.NoError(t, json.Unmarshal([]byte(list), &l))
	require.Len(t, l.Workers, 2)
	assert.Equal(t, strings.Replace(p.URL, "http://", "http://redacted@", 1), l.Workers[0].URL)
	_, one := call(t, g.addr, http.MethodGet, "/workers/"+l.Workers[0].ID, "")
	_, metrics := call(t, g.addr, http.MethodGet, "/metrics", "")
	assert.Contains(t, metrics, `worker="http://redacted@`, "per-worker series exist, redacted")
	status, _ = call(t, g.addr, http.MethodDelete, "/workers/"+l.Workers[1].ID, "")
	require.Equal(t, http.StatusAccepted, status)
	// A duplicate registration's 409 names the worker without its credentials.
	_, dup := call(t, g.addr, http.MethodPost, "/workers", `{"url":"`+withUserinfo(p.URL)+`","worker_type":"prefill"}`)
	time.Sleep(200 * time.Millisecond) // let the log lines of the removal land
	for name, text := range map[string]string{"GET /workers": list, "GET /workers/{id}": one, "/metrics": metrics, "409": dup, "log": g.stderr.String()} {
		assert.NotContains(t, text, secret, "%s shows the worker's password", name)
	}
	assert.Contains(t, g.stderr.String(), "redacted@", "the log names the workers (redacted)")
}

func TestMetadataAndLinkLocalWorkersAreRefused(t *testing.T) {
	t.Parallel()
	g := launch(t, nil, "--pd-disaggregation", "--log-level", "error", "--max-workers", "1")
	for _, u := range []string{"http://169.254.169.254", "http://169.254.10.1:8000", "http://[fe80::1]:8000", "http://[fd00:ec2::254]"} {
		status, body := call(t, g.addr, http.MethodPost, "/workers", `{"url":"`+u+`","worker_type":"prefill"}`)
		assert.Equal(t, http.StatusBadRequest, status, "%s: %s", u, body)
		assert.Contains(t, body, `"code":"BAD_REQUEST"`, u)
		assert.Contains(t, body, "--worker-allowed-hosts", u)
	}
	status, body := call(t, g.addr, http.MethodPost, "/workers", `{"url":"http://127.0.0.1:9","worker_type":"prefill"}`)
	require.Equal(t, http.StatusAccepted, status, body)
	status, body = call(t, g.addr, http.MethodPost, "/workers", `{"url":"http://127.0.0.1:10","worker_type":"decode"}`)
	assert.Equal(t, http.StatusConflict, status, body)
	assert.Contains(t, body, `"code":"WORKER_LIMIT_REACHED"`)
	_, list := call(t, g.addr, http.MethodGet, "/workers", "")
	assert.Contains(t, list, `"total":1`, "only the loopback worker is registered")
}
