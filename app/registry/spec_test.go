package registry_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/app/registry"
	"github.com/smg-go/smg/domain/errs"
	"github.com/smg-go/smg/domain/worker"
)

func ptr[T any](v T) *T { return &v }

func TestParseSpecAcceptsTheSeedBodiesVerbatim(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		body string
		want worker.Worker
	}{
		{
			name: "vLLM HTTP example: NIXL prefill",
			body: `{"url": "http://prefill-0:8000", "worker_type": "prefill", "kv_connector": "NixlConnector"}`,
			want: worker.Worker{URL: "http://prefill-0:8000", Role: worker.RolePrefill, Mode: worker.ConnHTTP,
				Runtime: worker.RuntimeUnspecified, KVConnector: "NixlConnector", Priority: 50, Cost: 1},
		},
		{
			name: "vLLM HTTP example: NIXL decode",
			body: `{"url": "http://decode-0:8000", "worker_type": "decode", "kv_connector": "NixlConnector"}`,
			want: worker.Worker{URL: "http://decode-0:8000", Role: worker.RoleDecode, Mode: worker.ConnHTTP,
				Runtime: worker.RuntimeUnspecified, KVConnector: "NixlConnector", Priority: 50, Cost: 1},
		},
		{
			name: "MoRI-IO example keeps runtime, connector and labels",
			body: `{"url": "http://prefill-0:8000", "worker_type": "prefill", "runtime_type": "vllm",
       "kv_connector": "MoRIIOConnector", "labels": {"moriio_mode": "write"}}`,
			want: worker.Worker{URL: "http://prefill-0:8000", Role: worker.RolePrefill, Mode: worker.ConnHTTP,
				Runtime: worker.RuntimeVLLM, KVConnector: "MoRIIOConnector", Labels: map[string]string{"moriio_mode": "write"},
				Priority: 50, Cost: 1},
		},
		{
			name: "Mooncake: top-level kv_engine_id and bootstrap_port are honoured",
			body: `{"url":"http://10.0.0.1:8000/","worker_type":"prefill","runtime":"vllm","kv_connector":"MooncakeConnector","kv_role":"kv_producer","kv_engine_id":"eng-1","bootstrap_port":8998}`,
			want: worker.Worker{URL: "http://10.0.0.1:8000", Role: worker.RolePrefill, Mode: worker.ConnHTTP,
				Runtime: worker.RuntimeVLLM, KVConnector: "MooncakeConnector", KVRole: "kv_producer", KVEngineID: "eng-1",
				BootstrapPort: ptr(8998), Priority: 50, Cost: 1},
		},
		{
			name: "the same names as labels fill the dedicated fields",
			body: `{"url":"http://p:8000","worker_type":"prefill","labels":{"kv_connector":"MooncakeConnector","kv_role":"kv_producer","kv_engine_id":"e2","bootstrap_port":"9001","tp_size":"8"}}`,
			want: worker.Worker{URL: "http://p:8000", Role: worker.RolePrefill, Mode: worker.ConnHTTP,
				Runtime: worker.RuntimeUnspecified, KVConnector: "MooncakeConnector", KVRole: "kv_producer", KVEngineID: "e2",
				BootstrapPort: ptr(9001), Labels: map[string]string{"tp_size": "8"}, Priority: 50, Cost: 1},
		},
		{
			name: "top-level fields win over labels; empty engine id dropped",
			body: `{"url":"http://p:8000","worker_type":"prefill","kv_connector":"NixlConnector","bootstrap_port":7000,"labels":{"kv_connector":"MooncakeConnector","bootstrap_port":"9001","kv_engine_id":""}}`,
			want: worker.Worker{URL: "http://p:8000", Role: worker.RolePrefill, Mode: worker.ConnHTTP,
				Runtime: worker.RuntimeUnspecified, KVConnector: "NixlConnector", BootstrapPort: ptr(7000), Priority: 50, Cost: 1},
		},
		{
			name: "defaults: regular worker; models as cards or strings; health overrides; unknown keys ignored",
			body: `{"url":"grpc://g:50051","models":[{"id":"m1","display_name":"x"},"m2"],"priority":7,"cost":0.5,"api_key":"k",
"pairing_protocol":"p1","health":{"timeout_secs":2,"check_interval_secs":3,"success_threshold":1,"failure_threshold":4,"disable_health_check":true,"drain_settle_secs":0},
"http_pool":{"timeout_secs":30},"resilience":{"max_retries":2}}`,
			want: worker.Worker{URL: "grpc://g:50051", Role: worker.RoleRegular, Mode: worker.ConnGRPC,
				Runtime: worker.RuntimeUnspecified, Models: []string{"m1", "m2"}, Labels: map[string]string{"pairing_protocol": "p1"},
				Priority: 7, Cost: 0.5, APIKey: "k",
				Health: worker.HealthConfig{Timeout: 2 * time.Second, Interval: 3 * time.Second, SuccessThreshold: 1,
					FailureThreshold: 4, Disable: true, DrainSettle: ptr(time.Duration(0))}},
		},
		{
			name: "ipc:// regular worker is allowed",
			body: `{"url":"ipc:///tmp/w.sock"}`,
			want: worker.Worker{URL: "ipc:///tmp/w.sock", Role: worker.RoleRegular, Mode: worker.ConnZMQ,
				Runtime: worker.RuntimeUnspecified, Priority: 50, Cost: 1},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			spec, err := registry.ParseSpec([]byte(tc.body))
			require.NoError(t, err)
			got, err := spec.Build()
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestSpecErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		body string
		msg  string
	}{
		{"empty body", ``, "Invalid JSON body: request body is empty"},
		{"invalid JSON", `{"url": "http://a:1",`, "Invalid JSON body: unexpected EOF"},
		{"not an object", `[1]`, "Invalid JSON body: the body must be a JSON object, got array"},
		{"trailing data", `{"url":"http://a:1"} {}`, "Invalid JSON body: unexpected data after the JSON object"},
		{"wrong type", `{"url":"http://a:1","bootstrap_port":"x"}`, "Invalid JSON body: field 'bootstrap_port' must be a number, got string"},
		{"missing url", `{"worker_type":"prefill"}`, "Invalid value for field 'url': the worker URL is required"},
		{"malformed URL (no scheme)", `{"url":"10.0.0.5:8000"}`,
			"Invalid value for field 'worker_url': 10.0.0.5:8000 - URL must start with a lowercase http://, https://, grpc://, grpcs://, or ipc:// scheme"},
		{"malformed URL (no host)", `{"url":"http://"}`, "Invalid value for field 'worker_url': http:// - URL has no host"},
		{"malformed URL (bad port)", `{"url":"http://a:70000"}`, "Invalid value for field 'worker_url': http://a:70000 - port must be between 1 and 65535"},
		{"unknown worker_type", `{"url":"http://a:1","worker_type":"gpu"}`,
			`Invalid value for field 'worker_type': unknown worker_type "gpu" (expected regular, prefill, decode or encode)`},
		{"unknown runtime_type", `{"url":"http://a:1","runtime_type":"llamacpp"}`,
			`Invalid value for field 'runtime_type': unknown runtime_type "llamacpp" (expected sglang, vllm, trtllm, mlx, tokenspeed, generic or external)`},
		{"runtime alias conflicts", `{"url":"http://a:1","runtime_type":"vllm","runtime":"sglang"}`,
			`Invalid value for field 'runtime': "sglang" conflicts with runtime_type "vllm"`},
		{"unknown connection_mode", `{"url":"http://a:1","connection_mode":"tcp"}`,
			`Invalid value for field 'connection_mode': "tcp" (expected http, grpc or zmq)`},
		{"ipc:// prefill", `{"url":"ipc:///tmp/p.sock","worker_type":"prefill"}`,
			"ZMQ worker ipc:///tmp/p.sock cannot serve worker type prefill: the direct-ZMQ backend carries no KV-transfer metadata and has no encode path, so encode/prefill/decode disaggregation requires a gRPC worker"},
		{"ipc:// decode", `{"url":"ipc:///tmp/d.sock","worker_type":"decode"}`,
			"ZMQ worker ipc:///tmp/d.sock cannot serve worker type decode: the direct-ZMQ backend carries no KV-transfer metadata and has no encode path, so encode/prefill/decode disaggregation requires a gRPC worker"},
		{"ipc:// encode", `{"url":"ipc:///tmp/e.sock","worker_type":"encode"}`,
			"ZMQ worker ipc:///tmp/e.sock cannot serve worker type encode: the direct-ZMQ backend carries no KV-transfer metadata and has no encode path, so encode/prefill/decode disaggregation requires a gRPC worker"},
		{"bootstrap_port out of range", `{"url":"http://a:1","bootstrap_port":0}`,
			"Invalid value for field 'bootstrap_port': Port must be between 1 and 65535 (got 0)"},
		{"bootstrap_port label not a number", `{"url":"http://a:1","labels":{"bootstrap_port":"none"}}`,
			`Invalid value for label 'bootstrap_port': "none" is not a port number`},
		{"empty model id", `{"url":"http://a:1","models":[{"id":""}]}`, "Invalid value for field 'models[0].id': must not be empty"},
		{"negative priority", `{"url":"http://a:1","priority":-1}`, "Invalid value for field 'priority': must be >= 0 (got -1)"},
		{"negative cost", `{"url":"http://a:1","cost":-0.5}`, "Invalid value for field 'cost': must be >= 0 (got -0.5)"},
		{"zero health threshold", `{"url":"http://a:1","health":{"failure_threshold":0}}`,
			"Invalid value for field 'health.failure_threshold': must be >= 1 (got 0)"},
		{"zero probe timeout", `{"url":"http://a:1","health":{"timeout_secs":0}}`,
			"Invalid value for field 'health.timeout_secs': must be >= 1 (got 0)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			spec, err := registry.ParseSpec([]byte(tc.body))
			if err == nil {
				_, err = spec.Build()
			}
			require.Error(t, err)
			e, ok := errs.As(err)
			require.True(t, ok, "want *errs.Error, got %T", err)
			assert.Equal(t, 400, e.Status)
			assert.Equal(t, "BAD_REQUEST", e.Code)
			assert.Equal(t, tc.msg, e.Message)
		})
	}
}
