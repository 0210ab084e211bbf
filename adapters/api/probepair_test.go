package api_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/adapters/api"
	"github.com/smg-go/smg/domain/errs"
	"github.com/smg-go/smg/domain/wire"
	"github.com/smg-go/smg/ports"
)

type fakeProber struct {
	res  ports.PairProbeResult
	err  error
	seen [][2]string
}

func (f *fakeProber) ProbePair(_ context.Context, p, d string) (ports.PairProbeResult, error) {
	f.seen = append(f.seen, [2]string{p, d})
	return f.res, f.err
}

func postProbe(t *testing.T, srv *httptest.Server, key, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, srv.URL+"/workers/probe-pair", strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b)
}

// POST /workers/probe-pair is guarded by the admin key, passes the named workers on,
// renders the probe (recomputed derived from the outcome), answers the use case's errors in
// the worker-API shape, refuses a body without both workers, and is a 503 without a
// dispatcher.
func TestProbePairRoute(t *testing.T) {
	t.Parallel()
	pr := &fakeProber{res: ports.PairProbeResult{PrefillID: "p", PrefillURL: "http://p", DecodeID: "d", DecodeURL: "http://d",
		Connector: "nixl", Outcome: ports.PairProbeRecomputed, Status: 200, Measured: true, PromptTokens: 300, RecomputedTokens: 300, ElapsedMS: 7}}
	srv := serveTenants(t, api.Deps{Auth: api.AuthOptions{AdminAPIKey: "adm"}, Prober: pr})
	status, body := postProbe(t, srv, "", `{"prefill":"p","decode":"d"}`)
	assert.Equal(t, http.StatusUnauthorized, status)
	assert.Equal(t, wire.CodeWorkerUnauthorized, errCode(t, body))
	assert.Empty(t, pr.seen, "an unauthenticated call probes nothing")

	status, body = postProbe(t, srv, "adm", `{"prefill":"p","decode":"http://d"}`)
	require.Equal(t, http.StatusOK, status, body)
	assert.Equal(t, [][2]string{{"p", "http://d"}}, pr.seen)
	assert.JSONEq(t, `{"prefill_id":"p","prefill_url":"http://p","decode_id":"d","decode_url":"http://d","connector":"nixl",
		"outcome":"recomputed","recomputed":true,"measured":true,"status":200,"prompt_tokens":300,"cached_tokens":0,
		"recomputed_tokens":300,"elapsed_ms":7}`, body)

	status, body = postProbe(t, srv, "adm", `{"prefill":"p"}`)
	assert.Equal(t, http.StatusBadRequest, status, body)
	assert.Equal(t, wire.CodeWorkerBadRequest, errCode(t, body))

	pr.err = errs.New(http.StatusNotFound, wire.CodeWorkerNotFound, "Worker x not found")
	status, body = postProbe(t, srv, "adm", `{"prefill":"x","decode":"d"}`)
	assert.Equal(t, http.StatusNotFound, status)
	assert.JSONEq(t, `{"error":"Worker x not found","code":"`+wire.CodeWorkerNotFound+`"}`, body)

	status, _ = postProbe(t, serveTenants(t, api.Deps{}), "", `{"prefill":"p","decode":"d"}`)
	assert.Equal(t, http.StatusServiceUnavailable, status)
}

// errCode is the admin error body's code ({"error": message, "code": code}).
func errCode(t *testing.T, body string) string {
	t.Helper()
	var e struct {
		Error string `json:"error"`
		Code  string `json:"code"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &e), body)
	assert.NotEmpty(t, e.Error, body)
	return e.Code
}
