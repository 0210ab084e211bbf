package api_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/adapters/api"
	"github.com/smg-go/smg/adapters/store/memory"
	"github.com/smg-go/smg/app/config"
	"github.com/smg-go/smg/app/registry"
	"github.com/smg-go/smg/domain/worker"
)

func TestAddWorkerAnswers202WithLocation(t *testing.T) {
	t.Parallel()
	srv, _ := newGateway(t, gatewayOptions{pd: true})
	e := newEngine(t, "vllm", "m")
	r := do(t, http.MethodPost, srv.URL+"/workers",
		`{"url": "`+e.srv.URL+`", "worker_type": "prefill", "kv_connector": "NixlConnector"}`)
	require.Equal(t, http.StatusAccepted, r.status, r.body)
	var acc map[string]string
	require.NoError(t, json.Unmarshal([]byte(r.body), &acc))
	id := acc["worker_id"]
	_, err := uuid.Parse(id)
	require.NoError(t, err)
	assert.JSONEq(t, fmt.Sprintf(`{"status":"accepted","worker_id":%q,"url":%q,"location":"/workers/%s","message":"Worker addition queued for background processing"}`,
		id, e.srv.URL, id), r.body)
	assert.Equal(t, "/workers/"+id, r.header.Get("Location"))
	assert.Equal(t, "application/json", r.header.Get("Content-Type"))
}

// The seed's vLLM (HTTP) example: two POSTs register both legs with their connector.
func TestSeedVLLMExampleRegistersBothLegsWithTheirConnector(t *testing.T) {
	t.Parallel()
	srv, gw := newGateway(t, gatewayOptions{pd: true})
	p, d := newEngine(t, "vllm", "meta-llama/Llama-3.1-8B-Instruct"), newEngine(t, "vllm", "meta-llama/Llama-3.1-8B-Instruct")
	pid := register(t, srv.URL, `{"url": "`+p.srv.URL+`", "worker_type": "prefill", "kv_connector": "NixlConnector"}`)
	did := register(t, srv.URL, `{"url": "`+d.srv.URL+`", "worker_type": "decode", "kv_connector": "NixlConnector"}`)
	waitHealthy(t, srv.URL, pid)
	waitHealthy(t, srv.URL, did)

	r := do(t, http.MethodGet, srv.URL+"/workers", "")
	require.Equal(t, http.StatusOK, r.status)
	want := fmt.Sprintf(`{"workers":[
 {"id":%q,"url":%q,"model_id":"meta-llama/Llama-3.1-8B-Instruct","models":[{"id":"meta-llama/Llama-3.1-8B-Instruct"}],
  "worker_type":"prefill","connection_mode":"http","runtime_type":"vllm","labels":{"served_model_name":"meta-llama/Llama-3.1-8B-Instruct"},
  "kv_connector":"NixlConnector","priority":50,"cost":1,"is_healthy":true,"status":"ready","load":0,"pd_pairing":"unknown"},
 {"id":%q,"url":%q,"model_id":"meta-llama/Llama-3.1-8B-Instruct","models":[{"id":"meta-llama/Llama-3.1-8B-Instruct"}],
  "worker_type":"decode","connection_mode":"http","runtime_type":"vllm","labels":{"served_model_name":"meta-llama/Llama-3.1-8B-Instruct"},
  "kv_connector":"NixlConnector","priority":50,"cost":1,"is_healthy":true,"status":"ready","load":0,"pd_pairing":"unknown"}],
 "total":2,"stats":{"prefill_count":1,"decode_count":1,"regular_count":0}}`, pid, p.srv.URL, did, d.srv.URL)
	assert.JSONEq(t, want, r.body)

	// The pairing use case installs its key function; GET /workers shows it at once.
	gw.reg.SetPairingKey(func(w worker.Worker) string { return string(w.Runtime) + "/" + strings.ToLower(w.KVConnector) })
	r = do(t, http.MethodGet, srv.URL+"/workers/"+pid, "")
	require.Equal(t, http.StatusOK, r.status)
	var one map[string]any
	require.NoError(t, json.Unmarshal([]byte(r.body), &one))
	assert.Equal(t, "vllm/nixlconnector", one["pd_pairing"])
	assert.NotContains(t, r.body, "api_key")
}

func TestWorkerAPIErrors(t *testing.T) {
	t.Parallel()
	srv, _ := newGateway(t, gatewayOptions{pd: true})
	e := newEngine(t, "sglang", "m")
	id := register(t, srv.URL, `{"url":"`+e.srv.URL+`","worker_type":"decode"}`)
	unknown := uuid.NewString()

	tests := []struct {
		name   string
		method string
		path   string
		body   string
		status int
		want   string
	}{
		{"malformed URL", http.MethodPost, "/workers", `{"url":"10.0.0.5:8000","worker_type":"prefill"}`, 400,
			`{"error":"Invalid value for field 'worker_url': 10.0.0.5:8000 - URL must start with a lowercase http://, https://, grpc://, grpcs://, or ipc:// scheme","code":"BAD_REQUEST"}`},
		{"unknown worker_type", http.MethodPost, "/workers", `{"url":"http://127.0.0.1:9","worker_type":"gpu"}`, 400,
			`{"error":"Invalid value for field 'worker_type': unknown worker_type \"gpu\" (expected regular, prefill, decode or encode)","code":"BAD_REQUEST"}`},
		{"duplicate URL", http.MethodPost, "/workers", `{"url":"` + e.srv.URL + `","worker_type":"prefill"}`, 409,
			fmt.Sprintf(`{"error":"Worker already exists at URL '%s' with ID %s. Use DELETE /workers/%s, then POST again, to replace it.","code":"WORKER_ALREADY_EXISTS"}`, e.srv.URL, id, id)},
		{"invalid JSON", http.MethodPost, "/workers", `{"url": "http://127.0.0.1:9", "worker_type": `, 400,
			`{"error":"Invalid JSON body: unexpected EOF","code":"BAD_REQUEST"}`},
		{"not JSON at all", http.MethodPost, "/workers", `url=http://127.0.0.1:9`, 400,
			`{"error":"Invalid JSON body: invalid character 'u' looking for beginning of value","code":"BAD_REQUEST"}`},
		{"empty body", http.MethodPost, "/workers", ``, 400,
			`{"error":"request body is required","code":"BAD_REQUEST"}`},
		{"wrongly typed field", http.MethodPost, "/workers", `{"url":"http://127.0.0.1:9","bootstrap_port":"8998"}`, 400,
			`{"error":"Invalid JSON body: field 'bootstrap_port' must be a number, got string","code":"BAD_REQUEST"}`},
		{"ipc:// prefill", http.MethodPost, "/workers", `{"url":"ipc:///tmp/prefill.sock","worker_type":"prefill"}`, 400,
			`{"error":"ZMQ worker ipc:///tmp/prefill.sock cannot serve worker type prefill: the direct-ZMQ backend carries no KV-transfer metadata and has no encode path, so encode/prefill/decode disaggregation requires a gRPC worker","code":"BAD_REQUEST"}`},
		{"unknown id (GET)", http.MethodGet, "/workers/" + unknown, ``, 404,
			`{"error":"Worker ` + unknown + ` not found","code":"WORKER_NOT_FOUND"}`},
		{"unknown id (DELETE)", http.MethodDelete, "/workers/" + unknown, ``, 404,
			`{"error":"Worker ` + unknown + ` not found","code":"WORKER_NOT_FOUND"}`},
		{"id that is not a UUID", http.MethodGet, "/workers/nope", ``, 400,
			`{"error":"Invalid worker_id 'nope' (expected UUID). Error: invalid UUID length: 4","code":"BAD_REQUEST"}`},
		{"body over huma's limit", http.MethodPost, "/workers", `{"url":"` + strings.Repeat("a", 1<<20) + `"}`, 413,
			`{"error":"request body is too large limit=1048576 bytes","code":"REQUEST_ENTITY_TOO_LARGE"}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := do(t, tc.method, srv.URL+tc.path, tc.body)
			assert.Equal(t, tc.status, r.status)
			assert.JSONEq(t, tc.want, r.body[:min(len(r.body), 2000)])
			assert.Equal(t, "application/json", r.header.Get("Content-Type"))
		})
	}
	// Nothing but the first worker was registered.
	r := do(t, http.MethodGet, srv.URL+"/workers", "")
	assert.Contains(t, r.body, `"total":1`)
}

func TestListWorkersFiltersByModel(t *testing.T) {
	t.Parallel()
	srv, _ := newGateway(t, gatewayOptions{})
	a, b := newEngine(t, "sglang", "model-a"), newEngine(t, "sglang", "model-b")
	register(t, srv.URL, `{"url":"`+a.srv.URL+`","worker_type":"prefill"}`)
	register(t, srv.URL, `{"url":"`+b.srv.URL+`","worker_type":"decode"}`)
	register(t, srv.URL, `{"url":"grpc://127.0.0.1:1","models":["model-b"]}`)
	// Wait until both engines are detected: an undetected worker serves every model, so
	// model-a's count alone reaches 1 while a is still undetected (and b detected).
	require.Eventually(t, func() bool {
		_, a := get(srv.URL + "/workers?model=model-a")
		_, b := get(srv.URL + "/workers?model=model-b")
		return strings.Contains(a, `"total":1`) && strings.Contains(b, `"total":2`)
	}, waitFor, tick)

	tests := []struct {
		query string
		stats string
		total int
	}{
		{"", `{"prefill_count":1,"decode_count":1,"regular_count":1}`, 3},
		{"?model=model-a", `{"prefill_count":1,"decode_count":0,"regular_count":0}`, 1},
		{"?model=model-b", `{"prefill_count":0,"decode_count":1,"regular_count":1}`, 2},
		{"?model=other", `{"prefill_count":0,"decode_count":0,"regular_count":0}`, 0},
	}
	for _, tc := range tests {
		r := do(t, http.MethodGet, srv.URL+"/workers"+tc.query, "")
		require.Equal(t, http.StatusOK, r.status)
		var body struct {
			Workers []json.RawMessage `json:"workers"`
			Total   int               `json:"total"`
			Stats   json.RawMessage   `json:"stats"`
		}
		require.NoError(t, json.Unmarshal([]byte(r.body), &body))
		assert.Equal(t, tc.total, body.Total, tc.query)
		assert.Len(t, body.Workers, tc.total, tc.query)
		assert.JSONEq(t, tc.stats, string(body.Stats), tc.query)
	}
	r := do(t, http.MethodGet, srv.URL+"/workers?model=other", "")
	assert.Contains(t, r.body, `"workers":[]`, "an empty list is [], not null")
}

func TestDeleteWorker(t *testing.T) {
	t.Parallel()
	srv, _ := newGateway(t, gatewayOptions{})
	e := newEngine(t, "sglang", "m")
	id := register(t, srv.URL, `{"url":"`+e.srv.URL+`"}`)
	waitHealthy(t, srv.URL, id)

	r := do(t, http.MethodDelete, srv.URL+"/workers/"+id, "")
	require.Equal(t, http.StatusAccepted, r.status)
	assert.JSONEq(t, `{"status":"accepted","worker_id":"`+id+`","message":"Worker removal queued for background processing"}`, r.body)
	require.Eventually(t, func() bool {
		status, _ := get(srv.URL + "/workers/" + id)
		return status == http.StatusNotFound
	}, waitFor, tick)
	// The URL can be registered again.
	register(t, srv.URL, `{"url":"`+e.srv.URL+`"}`)
}

// A POST /workers body cut off by the server's --max-payload-size is the client's fault:
// 413 in the worker-API shape, not a 500.
func TestAddWorkerBodyOverServerLimitIs413(t *testing.T) {
	t.Parallel()
	mux := http.NewServeMux()
	h := api.NewHumaAPI(mux)
	store := memory.NewWorkers()
	api.Register(h, api.Deps{Registry: registry.New(store, config.Default(), nil, nil), Store: store})
	srv := httptest.NewServer(http.MaxBytesHandler(mux, 1000))
	defer srv.Close()
	body := `{"url":"http://127.0.0.1:9","labels":{"pad":"` + strings.Repeat("x", 5000) + `"}}`
	resp, err := http.Post(srv.URL+"/workers", "application/json", strings.NewReader(body))
	require.NoError(t, err)
	defer resp.Body.Close()
	got, _ := io.ReadAll(resp.Body)
	assert.Equal(t, http.StatusRequestEntityTooLarge, resp.StatusCode, "%s", got)
	assert.JSONEq(t, `{"error":"`+jsonMsg(t, got)+`","code":"REQUEST_ENTITY_TOO_LARGE"}`, string(got))
}

func jsonMsg(t *testing.T, b []byte) string {
	t.Helper()
	var v struct {
		Error string `json:"error"`
	}
	require.NoError(t, json.Unmarshal(b, &v))
	require.NotEmpty(t, v.Error)
	return v.Error
}
