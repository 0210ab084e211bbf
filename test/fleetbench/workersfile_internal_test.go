package fleetbench

import (
	"encoding/json"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestWorkersFileIsWhatPOSTWorkersTakesPerEngineAndTransport(t *testing.T) {
	t.Parallel()
	f := &Fleet{dir: t.TempDir(),
		Prefills: []*Sim{{URL: "http://127.0.0.1:1", BootstrapPort: 9001}},
		Decodes:  []*Sim{{URL: "http://127.0.0.1:2"}}}
	for _, c := range []struct {
		engine, transport string
		want              []map[string]any
	}{
		{"vllm", TransportHTTP, []map[string]any{
			{"url": "http://127.0.0.1:1", "worker_type": "prefill", "kv_connector": "NixlConnector"},
			{"url": "http://127.0.0.1:2", "worker_type": "decode", "kv_connector": "NixlConnector"}}},
		{"sglang", TransportHTTP, []map[string]any{
			{"url": "http://127.0.0.1:1", "worker_type": "prefill", "bootstrap_port": 9001.0},
			{"url": "http://127.0.0.1:2", "worker_type": "decode"}}},
		{"vllm", TransportGRPC, []map[string]any{
			{"url": "http://127.0.0.1:1", "worker_type": "prefill", "runtime_type": "vllm"},
			{"url": "http://127.0.0.1:2", "worker_type": "decode", "runtime_type": "vllm"}}},
		{"sglang", TransportGRPC, []map[string]any{
			{"url": "http://127.0.0.1:1", "worker_type": "prefill", "runtime_type": "sglang", "bootstrap_port": 9001.0},
			{"url": "http://127.0.0.1:2", "worker_type": "decode", "runtime_type": "sglang"}}},
	} {
		path, err := f.writeWorkersFile(c.engine, c.transport, "", 0)
		require.NoError(t, err)
		b, err := os.ReadFile(path)
		require.NoError(t, err)
		var doc struct {
			Workers []map[string]any `json:"workers"`
		}
		require.NoError(t, json.Unmarshal(b, &doc))
		assert.ElementsMatch(t, c.want, doc.Workers, "%s over %s", c.engine, c.transport)
	}
}
