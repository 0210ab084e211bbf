package api_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestHealthAndLiveness(t *testing.T) {
	t.Parallel()
	srv, _ := newGateway(t, gatewayOptions{pd: true})
	for _, path := range []string{"/health", "/liveness"} {
		r := do(t, http.MethodGet, srv.URL+path, "")
		assert.Equal(t, http.StatusOK, r.status, path)
		assert.Equal(t, "OK", r.body, path)
		assert.Equal(t, "text/plain", r.header.Get("Content-Type"), path)
	}
}

const notReady = `{"status":"not ready","reason":"insufficient healthy workers"}`

// The acceptance check: /readiness is 503 with only a prefill registered and 200
// once a decode is healthy.
func TestReadinessPDNeedsAHealthyPrefillAndDecode(t *testing.T) {
	t.Parallel()
	srv, _ := newGateway(t, gatewayOptions{pd: true, health: true})
	r := do(t, http.MethodGet, srv.URL+"/readiness", "")
	assert.Equal(t, http.StatusServiceUnavailable, r.status)
	assert.JSONEq(t, notReady, r.body)

	p := newEngine(t, "sglang", "m")
	pid := register(t, srv.URL, `{"url":"`+p.srv.URL+`","worker_type":"prefill","bootstrap_port":8998}`)
	waitHealthy(t, srv.URL, pid)
	r = do(t, http.MethodGet, srv.URL+"/readiness", "")
	assert.Equal(t, http.StatusServiceUnavailable, r.status, "only a prefill")
	assert.JSONEq(t, notReady, r.body)
	assert.Equal(t, "application/json", r.header.Get("Content-Type"))

	d := newEngine(t, "sglang", "m")
	d.down.Store(true)
	register(t, srv.URL, `{"url":"`+d.srv.URL+`","worker_type":"decode"}`)
	r = do(t, http.MethodGet, srv.URL+"/readiness", "")
	assert.Equal(t, http.StatusServiceUnavailable, r.status, "decode registered but not healthy")

	d.down.Store(false)
	require.Eventually(t, func() bool {
		status, _ := get(srv.URL + "/readiness")
		return status == http.StatusOK
	}, waitFor, tick)
	r = do(t, http.MethodGet, srv.URL+"/readiness", "")
	assert.JSONEq(t, `{"status":"ready","healthy_workers":2,"total_workers":2}`, r.body)

	// A stopped decode turns unhealthy within the thresholds and readiness follows.
	d.srv.Close()
	require.Eventually(t, func() bool {
		status, body := get(srv.URL + "/readiness")
		return status == http.StatusServiceUnavailable && strings.Contains(body, "not ready")
	}, waitFor, tick)
	r = do(t, http.MethodGet, srv.URL+"/workers", "")
	assert.Contains(t, r.body, `"is_healthy":false,"status":"not_ready"`)
}

// --ready-without-workers: an empty gateway (started to be filled through POST /workers)
// is ready; a registered worker brings the usual rule back, so a PD gateway with only a
// prefill is not ready, and it is ready again once the decode is healthy.
func TestReadinessWithoutWorkersOnlyWhileEmpty(t *testing.T) {
	t.Parallel()
	srv, _ := newGateway(t, gatewayOptions{pd: true, health: true, readyEmpty: true})
	r := do(t, http.MethodGet, srv.URL+"/readiness", "")
	assert.Equal(t, http.StatusOK, r.status, "empty")
	assert.JSONEq(t, `{"status":"ready","healthy_workers":0,"total_workers":0}`, r.body)

	p := newEngine(t, "sglang", "m")
	waitHealthy(t, srv.URL, register(t, srv.URL, `{"url":"`+p.srv.URL+`","worker_type":"prefill","bootstrap_port":8998}`))
	r = do(t, http.MethodGet, srv.URL+"/readiness", "")
	assert.Equal(t, http.StatusServiceUnavailable, r.status, "a prefill and no decode")
	assert.JSONEq(t, notReady, r.body)

	d := newEngine(t, "sglang", "m")
	waitHealthy(t, srv.URL, register(t, srv.URL, `{"url":"`+d.srv.URL+`","worker_type":"decode"}`))
	r = do(t, http.MethodGet, srv.URL+"/readiness", "")
	assert.Equal(t, http.StatusOK, r.status, "both legs")
	assert.JSONEq(t, `{"status":"ready","healthy_workers":2,"total_workers":2}`, r.body)
}

func TestReadinessRegularModeNeedsOneHealthyWorker(t *testing.T) {
	t.Parallel()
	srv, _ := newGateway(t, gatewayOptions{})
	r := do(t, http.MethodGet, srv.URL+"/readiness", "")
	assert.Equal(t, http.StatusServiceUnavailable, r.status)
	assert.JSONEq(t, notReady, r.body)

	register(t, srv.URL, `{"url":"grpc://127.0.0.1:1"}`) // never healthy here
	e := newEngine(t, "sglang", "m")
	id := register(t, srv.URL, `{"url":"`+e.srv.URL+`","worker_type":"prefill"}`)
	waitHealthy(t, srv.URL, id)
	r = do(t, http.MethodGet, srv.URL+"/readiness", "")
	assert.Equal(t, http.StatusOK, r.status)
	assert.JSONEq(t, `{"status":"ready","healthy_workers":1,"total_workers":2}`, r.body)
}

func TestModels(t *testing.T) {
	t.Parallel()
	srv, _ := newGateway(t, gatewayOptions{pd: true})
	r := do(t, http.MethodGet, srv.URL+"/v1/models", "")
	assert.Equal(t, http.StatusServiceUnavailable, r.status)
	assert.Equal(t, "No models available", r.body)
	assert.Equal(t, "text/plain", r.header.Get("Content-Type"))

	p, d := newEngine(t, "sglang", "model-a"), newEngine(t, "sglang", "model-a")
	waitHealthy(t, srv.URL, register(t, srv.URL, `{"url":"`+p.srv.URL+`","worker_type":"prefill"}`))
	waitHealthy(t, srv.URL, register(t, srv.URL, `{"url":"`+d.srv.URL+`","worker_type":"decode"}`))
	register(t, srv.URL, `{"url":"grpc://127.0.0.1:1","models":[{"id":"model-b"},{"id":"model-a"}]}`)

	r = do(t, http.MethodGet, srv.URL+"/v1/models", "")
	assert.Equal(t, http.StatusOK, r.status)
	assert.Equal(t, "application/json", r.header.Get("Content-Type"))
	assert.JSONEq(t, `{"object":"list","data":[
		{"id":"model-a","object":"model","created":0,"owned_by":"self_hosted"},
		{"id":"model-b","object":"model","created":0,"owned_by":"self_hosted"}]}`, r.body)
}
